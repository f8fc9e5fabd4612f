import Testing

@testable import ResourceKit

/// Arithmetic that must hold where `Int` has 32 bits (watchOS devices), checked here with 32-bit words.
@Suite struct WordWidthTests {
    /// A list's index spreads 32-bit hashes over its slots, as it does 64-bit ones: widened to 64 bits first,
    /// every 32-bit hash landed in slot 0, and every lookup was a scan.
    @Test func aListIndexSpreadsThirtyTwoBitHashesOverItsSlots() {
        var generator = SystemRandomNumberGenerator()
        let slots: UInt32 = 1_000
        var used = Set<UInt32>()
        for _ in 0..<20_000 {
            let slot = scaledSlot(UInt32.random(in: .min ... .max, using: &generator), slots: slots)
            #expect(slot < slots)
            used.insert(slot)
        }
        // 20 hashes a slot on average: every slot is hit but for a chance of about e^-20 each.
        #expect(used.count > 990)
    }

    @Test func theSlotOfAHashIsItsHighBitsScaledToTheSlots() {
        #expect(scaledSlot(UInt32.max, slots: 1_000) == 999)
        #expect(scaledSlot(UInt32(0), slots: 1_000) == 0)
        #expect(scaledSlot(UInt32(1) << 31, slots: 1_000) == 500)
        #expect(scaledSlot(UInt64(1) << 63, slots: 1_000) == 500)
        #expect(scaledSlot(UInt(bitPattern: -1), slots: 7) == 6)
    }
}
