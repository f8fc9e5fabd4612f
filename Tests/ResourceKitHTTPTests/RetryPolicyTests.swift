import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import TestSupport
import Testing

/// Every `Double` a policy turns into a `Duration`: out-of-range inputs are clamped, never a trap. Waits run on
/// a `ManualClock`; `run` advances it past each one and returns the waits the session asked for.
@Suite(.timeLimit(.minutes(1))) struct RetryPolicyTests {
    /// Sends a `GET` that fails with `503` until the last attempt, moving `clock` past every wait (at most
    /// `policy.maximumAttempts` of them), and returns the waits in order.
    func waits(of policy: RetryPolicy) async throws -> [Duration] {
        let clock = ManualClock()
        let failures = Array(repeating: ScriptedTransport.Answer.status(503), count: max(policy.maximumAttempts - 1, 0))
        let transport = ScriptedTransport(failures + [.status(204)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, retry: policy, timeLimit: nil, clock: clock)
        let call = Task { try await session.send(Endpoint(.get, "posts")) }
        let mover = Task {
            for _ in 0..<policy.maximumAttempts {
                // Cancelled once the call has ended: the wait then throws, and the mover stops.
                let pending = try? await clock.waitForSleepers(timeout: .seconds(30)) { !$0.isEmpty }
                guard let first = pending?.first, !Task.isCancelled else { return }
                clock.advance(by: first)
            }
        }
        let result = await call.result
        mover.cancel()
        await mover.value
        try result.get()
        #expect(transport.requestCount == policy.maximumAttempts)
        return clock.requestedSleeps
    }

    @Test(arguments: [
        (Double.nan, Duration.milliseconds(500)), (.infinity, .milliseconds(500)), (-.infinity, .zero),
        (7, .milliseconds(500)), (-0.5, .zero), (0.5, .milliseconds(250)),
    ])
    func jitterDrawsOutOfRangeNaNIncludedAreClamped(draw: Double, wait: Duration) async throws {
        let policy = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(500), jitter: .full(using: { draw }))
        #expect(try await waits(of: policy) == [wait])
    }

    @Test func aNaNMultiplierKeepsTheWaitInsteadOfDroppingIt() async throws {
        let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(500), multiplier: .nan, jitter: .none)
        #expect(try await waits(of: policy) == [.milliseconds(500), .milliseconds(500)])
    }

    @Test(arguments: [
        RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(1e20), maximumDelay: .seconds(1e20), jitter: .none),
        RetryPolicy(
            maximumAttempts: 2, initialDelay: .seconds(1e20), maximumDelay: .seconds(1e20),
            jitter: .full(using: { 0.999_999_999 })),
    ])
    func delaysBeyondWhatASecondsCountHoldsAreCappedAtTheLongestWait(policy: RetryPolicy) async throws {
        let waits = try await waits(of: policy)
        #expect(waits.count == 1)
        #expect(waits.allSatisfy { $0 > .seconds(999_999_990) && $0 <= .seconds(1_000_000_000) })
    }

    @Test(arguments: [(Duration.seconds(30), Duration.seconds(30)), (.seconds(1e20), .seconds(1e9))])
    func anInfiniteMultiplierGrowsTheWaitUpToTheMaximumDelay(maximumDelay: Duration, cap: Duration) async throws {
        let policy = RetryPolicy(
            maximumAttempts: 3, initialDelay: .seconds(1), multiplier: .infinity, maximumDelay: maximumDelay,
            jitter: .none)
        #expect(try await waits(of: policy) == [.seconds(1), cap])
    }

    @Test func policiesCompareByEverySettingAndJittersByTheirSource() {
        #expect(RetryPolicy.standard == RetryPolicy())
        #expect(RetryPolicy.never == RetryPolicy(maximumAttempts: 1))
        #expect(RetryPolicy.standard != RetryPolicy(maximumAttempts: 4))
        #expect(RetryPolicy.standard != RetryPolicy(retryableMethods: [.get]))
        #expect(RetryPolicy(jitter: .none) != RetryPolicy(jitter: .full))
        #expect(RetryPolicy.Jitter.none == .none)
        #expect(RetryPolicy.Jitter.full == .full)
        let seeded = RetryPolicy.Jitter.full(using: { 0.5 })
        #expect(RetryPolicy(jitter: seeded) == RetryPolicy(jitter: seeded))
        #expect(seeded != .full(using: { 0.5 }))
        #expect(seeded != .full)
        var endpoint = Endpoint(.get, "posts")
        endpoint.retry = .standard
        #expect(endpoint.retry == .standard)
    }
}
