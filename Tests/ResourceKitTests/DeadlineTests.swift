import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The session's deadline, on a `ManualClock`: the transport holds every request until the test answers it.
@Suite(.timeLimit(.minutes(1))) struct DeadlineTests {
    let post = Post(id: "1", title: "v")

    func session(_ transport: any HTTPTransport, clock: ManualClock, timeout: TimeInterval = 60) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport, timeout: timeout, clock: clock)
    }

    @Test func aSubSecondTimeoutEndsAtItsDeadlineAndCancelsTheRequest() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1", timeout: 0.8), as: Post.self) }
        #expect(await clock.waitForSleepers { $0 == [.milliseconds(800)] } == [.milliseconds(800)])
        clock.advance(by: .milliseconds(799))
        #expect(transport.isHeld(0))
        clock.advance(by: .milliseconds(1))
        await #expect(throws: NetworkError.timeout) { try await task.value }
        try await transport.waitUntilFinished(0)
        #expect(transport.cancelledRequests == [0])
    }

    @Test func anAnswerBeforeTheDeadlineWins() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1", timeout: 0.8), as: Post.self) }
        await clock.waitForSleepers { $0 == [.milliseconds(800)] }
        clock.advance(by: .milliseconds(200))
        transport.answer(0, json: json(post))
        #expect(try await task.value == post)
        // The deadline's timer is gone with the request.
        #expect(await clock.waitForSleepers { $0.isEmpty } == [])
    }

    @Test func theSessionsTimeoutAppliesWhenTheEndpointSetsNone() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock, timeout: 2.5)
        let task = Task { try await session.send(Endpoint(.get, "posts/1")) }
        #expect(await clock.waitForSleepers { $0 == [.milliseconds(2500)] } == [.milliseconds(2500)])
        clock.advance(by: .milliseconds(2500))
        await #expect(throws: NetworkError.timeout) { try await task.value }
    }

    /// A transport that never answers and ignores cancellation, like `URLSession` on Linux facing a Basic
    /// challenge: the caller still gets `.timeout` at the deadline.
    @Test func aTransportThatNeverAnswersStillEndsAtTheDeadline() async throws {
        let clock = ManualClock()
        let stuck = StuckTransport()
        let session = session(stuck, clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1", timeout: 1)) }
        await clock.waitForSleepers { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        await #expect(throws: NetworkError.timeout) { try await task.value }
        #expect(stuck.sawCancellation)
        stuck.release()
    }

    @Test func theDeadlineCoversRetriesAndTheirWaits() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503)])
        let policy = RetryPolicy(maximumAttempts: 10, initialDelay: .milliseconds(500), jitter: .none)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, retry: policy, timeout: 2, clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1")) }
        await clock.waitForSleepers { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        await clock.waitForSleepers { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        // The next wait (2 s) would end past the deadline (2 s from the start): the last error is thrown now.
        await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) { try await task.value }
        #expect(transport.requestCount == 3)
    }

    @Test(arguments: [0, -1, TimeInterval.infinity, TimeInterval.nan, 1e300])
    func unusualTimeoutsSetNoDeadline(timeout: TimeInterval) async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        var endpoint = Endpoint(.get, "posts/1")
        endpoint.timeout = timeout
        let task = Task { try await session.send(endpoint, as: Post.self) }
        try await transport.waitForRequests(1)
        #expect(clock.sleepers.isEmpty)
        transport.answer(0, json: json(post))
        #expect(try await task.value == post)
    }

    @Test func theBuiltRequestsTimeoutIsRoundedUpToWholeSeconds() async throws {
        let session = makeSession(StubTransport())
        #expect(try await session.makeURLRequest(for: Endpoint(.get, "posts", timeout: 0.8)).timeoutInterval == 1)
        #expect(try await session.makeURLRequest(for: Endpoint(.get, "posts", timeout: 7)).timeoutInterval == 7)
        #expect(try await session.makeURLRequest(for: Endpoint(.get, "posts", timeout: 7.2)).timeoutInterval == 8)
    }
}

/// Never answers and ignores cancellation until released.
final class StuckTransport: HTTPTransport {
    private let latch = AsyncLatch()
    private let cancelled = Locked(false)

    var sawCancellation: Bool { cancelled.withLock { $0 } }

    func release() { latch.open() }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Task.detached { [latch] in
                    try? await latch.wait()
                    continuation.resume()
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
        return HTTPResponse(statusCode: 200)
    }
}
