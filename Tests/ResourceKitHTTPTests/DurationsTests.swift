import Foundation
import TestSupport
import Testing

@testable import ResourceKitHTTP

/// The one backoff and the two jitters every growing wait uses (retries, reconnections, polling), checked
/// against the formulas each of them carried before they shared one: the same waits, bit for bit, over
/// seeded random and hostile inputs. (The reconnections' are checked in ResourceKitEventStreamTests.)
@Suite struct DurationsTests {
    /// What a retry waited before the helpers were shared.
    static func retryReference(_ policy: RetryPolicy, retry: Int, draw: Double?) -> Duration {
        let growth = policy.multiplier.isNaN ? 1 : max(policy.multiplier, 1)
        let factor = pow(growth, Double(max(retry - 1, 0)))
        let seconds = min(policy.initialDelay.seconds * factor, policy.maximumDelay.seconds, 1e9)
        guard seconds > 0 else { return .zero }
        return .seconds(seconds * (draw.map(HostileWaits.unit) ?? 1))
    }

    @Test(arguments: 0..<4)
    func retryWaitsAreTheFormulaTheyAlwaysWere(seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        for _ in 0..<2_000 {
            let draw: Double? = Bool.random(using: &generator) ? HostileWaits.double(&generator) : nil
            let policy = RetryPolicy(
                initialDelay: HostileWaits.duration(&generator), multiplier: HostileWaits.double(&generator),
                maximumDelay: HostileWaits.duration(&generator), jitter: draw.map { value in .full { value } } ?? .none)
            let retry = Int.random(in: -2...80, using: &generator)
            let expected = Self.retryReference(policy, retry: retry, draw: draw)
            #expect(policy.backoff(beforeRetry: retry) == expected, "seed \(seed): \(policy) retry \(retry)")
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
