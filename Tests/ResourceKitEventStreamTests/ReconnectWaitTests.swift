import Foundation
import ResourceKitEventStream
import ResourceKitHTTP
import TestSupport
import Testing

/// A reconnection's wait, checked against the formula it carried before it shared the HTTP layer's backoff and
/// jitter: the same waits, bit for bit, over seeded random and hostile inputs.
@Suite struct ReconnectWaitTests {
    /// What a reconnection waited before the helpers were shared.
    static func reference(_ policy: ReconnectPolicy, failures: Int, base: Duration, draw: Double?) -> Duration {
        let base = failures > 0 ? max(base, .milliseconds(100)) : max(base, .zero)
        let growth = policy.multiplier.isNaN ? 1 : max(policy.multiplier, 1)
        let ceiling = HostileWaits.seconds(max(policy.maximumDelay, base))
        let seconds = min(HostileWaits.seconds(base) * pow(growth, Double(max(failures - 1, 0))), ceiling, 1e9)
        guard seconds > 0 else { return .zero }
        return .seconds(min(seconds * (1 + (draw.map(HostileWaits.unit) ?? 0) / 2), 1e9))
    }

    @Test(arguments: 0..<4)
    func reconnectWaitsAreTheFormulaTheyAlwaysWere(seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        for _ in 0..<2_000 {
            let draw: Double? = Bool.random(using: &generator) ? HostileWaits.double(&generator) : nil
            let policy = ReconnectPolicy(
                initialDelay: HostileWaits.duration(&generator), multiplier: HostileWaits.double(&generator),
                maximumDelay: HostileWaits.duration(&generator), jitter: draw.map { value in .full { value } } ?? .none)
            let failures = Int.random(in: -2...80, using: &generator)
            let base = HostileWaits.duration(&generator)
            let expected = Self.reference(policy, failures: failures, base: base, draw: draw)
            #expect(policy.wait(afterFailures: failures, base: base) == expected, "seed \(seed): \(policy)")
        }
    }
}
