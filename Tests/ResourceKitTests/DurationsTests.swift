import Foundation
import ResourceKit
import ResourceKitEventStream
import TestSupport
import Testing

@testable import ResourceKitHTTP

/// The one backoff and the two jitters every growing wait uses (retries, reconnections, polling), checked
/// against the formulas each of them carried before they shared one: the same waits, bit for bit, over
/// seeded random and hostile inputs.
@Suite struct DurationsTests {
    /// What a retry waited before the helpers were shared.
    static func retryReference(_ policy: RetryPolicy, retry: Int, draw: Double?) -> Duration {
        let growth = policy.multiplier.isNaN ? 1 : max(policy.multiplier, 1)
        let factor = pow(growth, Double(max(retry - 1, 0)))
        let seconds = min(policy.initialDelay.seconds * factor, policy.maximumDelay.seconds, 1e9)
        guard seconds > 0 else { return .zero }
        return .seconds(seconds * (draw.map(Self.unit) ?? 1))
    }

    /// What a reconnection waited before the helpers were shared.
    static func reconnectReference(_ policy: ReconnectPolicy, failures: Int, base: Duration, draw: Double?)
        -> Duration
    {
        let base = failures > 0 ? max(base, .milliseconds(100)) : max(base, .zero)
        let growth = policy.multiplier.isNaN ? 1 : max(policy.multiplier, 1)
        let ceiling = max(policy.maximumDelay, base).seconds
        let seconds = min(base.seconds * pow(growth, Double(max(failures - 1, 0))), ceiling, 1e9)
        guard seconds > 0 else { return .zero }
        return .seconds(min(seconds * (1 + (draw.map(Self.unit) ?? 0) / 2), 1e9))
    }

    static func unit(_ draw: Double) -> Double { draw.isNaN ? 1 : min(max(draw, 0), 1) }

    static let hostileDoubles: [Double] = [0, -1, 0.5, 1, 2, 10, .nan, .infinity, -.infinity, 1e300, -1e-300]
    static let hostileDurations: [Duration] = [
        .zero, .milliseconds(1), .seconds(3), .seconds(-5), .seconds(1e12), .seconds(Int64.max), .seconds(Int64.min),
    ]

    static func randomDouble(_ generator: inout SeededGenerator) -> Double {
        Int.random(in: 0..<3, using: &generator) == 0
            ? hostileDoubles.randomElement(using: &generator)!
            : Double.random(in: -2..<20, using: &generator)
    }

    static func randomDuration(_ generator: inout SeededGenerator) -> Duration {
        Int.random(in: 0..<3, using: &generator) == 0
            ? hostileDurations.randomElement(using: &generator)!
            : .milliseconds(Int64.random(in: -1_000...600_000, using: &generator))
    }

    @Test(arguments: 0..<4)
    func retryWaitsAreTheFormulaTheyAlwaysWere(seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        for _ in 0..<2_000 {
            let draw: Double? = Bool.random(using: &generator) ? Self.randomDouble(&generator) : nil
            let policy = RetryPolicy(
                initialDelay: Self.randomDuration(&generator), multiplier: Self.randomDouble(&generator),
                maximumDelay: Self.randomDuration(&generator), jitter: draw.map { value in .full { value } } ?? .none)
            let retry = Int.random(in: -2...80, using: &generator)
            let expected = Self.retryReference(policy, retry: retry, draw: draw)
            #expect(policy.backoff(beforeRetry: retry) == expected, "seed \(seed): \(policy) retry \(retry)")
        }
    }

    @Test(arguments: 0..<4)
    func reconnectWaitsAreTheFormulaTheyAlwaysWere(seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        for _ in 0..<2_000 {
            let draw: Double? = Bool.random(using: &generator) ? Self.randomDouble(&generator) : nil
            let policy = ReconnectPolicy(
                initialDelay: Self.randomDuration(&generator), multiplier: Self.randomDouble(&generator),
                maximumDelay: Self.randomDuration(&generator), jitter: draw.map { value in .full { value } } ?? .none)
            let failures = Int.random(in: -2...80, using: &generator)
            let base = Self.randomDuration(&generator)
            let expected = Self.reconnectReference(policy, failures: failures, base: base, draw: draw)
            #expect(policy.wait(afterFailures: failures, base: base) == expected, "seed \(seed): \(policy)")
        }
    }

    @Test func jitterNamesSayWhatItDoes() {
        let high = RetryPolicy.Jitter.full { 1 }
        let low = RetryPolicy.Jitter.full { 0 }
        #expect(high.shortening(seconds: 8) == .seconds(8))
        #expect(low.shortening(seconds: 8) == .zero)
        #expect(RetryPolicy.Jitter.none.shortening(seconds: 8) == .seconds(8))
        #expect(high.lengthening(seconds: 8, byUpToOneIn: 2) == .seconds(12))
        let tenthLonger: Double = 8 * (1 + 1.0 / 10)
        #expect(high.lengthening(seconds: 8, byUpToOneIn: 10) == .seconds(tenthLonger))
        #expect(low.lengthening(seconds: 8, byUpToOneIn: 2) == .seconds(8))
        #expect(RetryPolicy.Jitter.none.lengthening(seconds: 8, byUpToOneIn: 2) == .seconds(8))
        // Never past the longest wait, and a NaN draw counts as the whole wait, never less.
        #expect(high.lengthening(seconds: 1e9, byUpToOneIn: 2) == .longest)
        #expect(RetryPolicy.Jitter.full { .nan }.shortening(seconds: 8) == .seconds(8))
    }

    @Test func durationsConvertWithoutTrapping() {
        #expect(Duration.seconds(Int64.max).clampedNanoseconds == .max)
        #expect(Duration.seconds(Int64.min).clampedNanoseconds == .min)
        #expect(Duration.seconds(-1).clampedNanoseconds == -1_000_000_000)
        #expect(Duration.milliseconds(1_500).clampedNanoseconds == 1_500_000_000)
        #expect(Duration.seconds(1e20).seconds == 1e20)
        #expect(Backoff.seconds(initial: .zero, multiplier: .infinity, exponent: 3, ceiling: .seconds(1)) == nil)
        #expect(Backoff.seconds(initial: .seconds(1), multiplier: .nan, exponent: 50, ceiling: .seconds(60)) == 1)
        #expect(Backoff.seconds(initial: .seconds(1), multiplier: 2, exponent: -4, ceiling: .seconds(60)) == 1)
        #expect(
            Backoff.seconds(initial: .seconds(1), multiplier: 10, exponent: 400, ceiling: .seconds(Int64.max)) == 1e9)
    }
}
