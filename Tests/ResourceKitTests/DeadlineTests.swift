import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The session's deadline, on a `ManualClock`: the transport holds every request until the test answers it.
@Suite(.timeLimit(.minutes(1))) struct DeadlineTests {
    let post = Post(id: "1", title: "v")

    func session(
        _ transport: any HTTPTransport, clock: ManualClock, timeLimit: Duration? = .seconds(60)
    ) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport, timeLimit: timeLimit, clock: clock)
    }

    @Test func aSubSecondTimeoutEndsAtItsDeadlineAndCancelsTheRequest() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        let task = Task {
            try await session.send(Endpoint(.get, "posts/1", timeLimit: .milliseconds(800)), as: Post.self)
        }
        #expect(
            try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(800)] } == [
                .milliseconds(800)
            ])
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
        let task = Task {
            try await session.send(Endpoint(.get, "posts/1", timeLimit: .milliseconds(800)), as: Post.self)
        }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(800)] }
        clock.advance(by: .milliseconds(200))
        transport.answer(0, json: json(post))
        #expect(try await task.value == post)
        // The session's one timer still sleeps toward that deadline; when it wakes, nothing is due and it
        // ends: the answered request is untouched.
        #expect(clock.sleepers == [.milliseconds(600)])
        clock.advance(by: .milliseconds(600))
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0.isEmpty } == [])
        #expect(transport.cancelledRequests.isEmpty)
    }

    @Test func theSessionsTimeoutAppliesWhenTheEndpointSetsNone() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock, timeLimit: .milliseconds(2500))
        let task = Task { try await session.send(Endpoint(.get, "posts/1")) }
        #expect(
            try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(2500)] } == [
                .milliseconds(2500)
            ])
        clock.advance(by: .milliseconds(2500))
        await #expect(throws: NetworkError.timeout) { try await task.value }
    }

    /// A transport that never answers and ignores cancellation, like `URLSession` on Linux facing a Basic
    /// challenge: the caller still gets `.timeout` at the deadline.
    @Test func aTransportThatNeverAnswersStillEndsAtTheDeadline() async throws {
        let clock = ManualClock()
        let stuck = StuckTransport()
        let session = session(stuck, clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1", timeLimit: .seconds(1))) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        await #expect(throws: NetworkError.timeout) { try await task.value }
        #expect(stuck.sawCancellation)
        stuck.release()
    }

    /// A request the transport answers while it starts leaves no timer toward its deadline: the next request,
    /// whose deadline is later, arms the session's one timer for its own.
    @Test func anAnswerGivenAsTheRequestStartsLeavesNoTimerBehind() async throws {
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        let clock = ManualClock()
        let release = AsyncLatch()
        let transport = ScriptedTransport([
            .status(200, json: json(post)),
            .respond { request throws(NetworkError) in
                try await release.wait()
                return HTTPResponse(statusCode: 204, url: request.url)
            },
        ])
        let session = session(transport, clock: clock, timeLimit: .seconds(60))
        #expect(try await session.send(Endpoint(.get, "posts/1"), as: Post.self) == post)
        let held = Task { try await session.send(Endpoint(.get, "posts/1", timeLimit: .seconds(120))) }
        // A timer left toward the first deadline (60 s) would be the session's one timer, and the later deadline
        // would arm none of its own.
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { !$0.isEmpty } == [.seconds(120)])
        release.open()
        _ = try await held.value
        #expect(transport.requestCount == 2)
    }

    @Test func theDeadlineCoversRetriesAndTheirWaits() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503)])
        let policy = RetryPolicy(maximumAttempts: 10, initialDelay: .milliseconds(500), jitter: .none)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, retry: policy, timeLimit: .seconds(2), clock: clock)
        let task = Task { try await session.send(Endpoint(.get, "posts/1")) }
        // The shortest sleep is the retry's wait. (An attempt that the transport answers while it starts leaves
        // no deadline timer behind; where the transport's task cannot start at once, one sleeps toward 2 s.)
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0.min() == .milliseconds(500) } != [])
        clock.advance(by: .milliseconds(500))
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0.min() == .seconds(1) } != [])
        clock.advance(by: .seconds(1))
        // The next wait (2 s) would end past the deadline (2 s from the start): the last error is thrown now.
        await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) { try await task.value }
        #expect(transport.requestCount == 3)
    }

    /// Seeded random deadlines and answers for 40 concurrent requests, checked second by second against the
    /// obvious model: a request ends with `.timeout` exactly when the clock reaches its deadline first.
    @Test(arguments: [1, 2, 3, 42, 2026])
    func manyDeadlinesFireInOrderAndOnlyForUnansweredRequests(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        let count = 40
        let timeouts = (0..<count).map { _ in Int(random.next() % 20) + 1 }
        // A request answered at second `answerAt` (if before its deadline) succeeds.
        let answerAt = (0..<count).map { _ in Int(random.next() % 25) + 1 }
        var tasks: [Task<Result<Post, NetworkError>, Never>] = []
        for index in 0..<count {
            let endpoint = Endpoint(.get, "posts/\(index)", timeLimit: .seconds(timeouts[index]))
            tasks.append(
                Task {
                    do throws(NetworkError) { return .success(try await session.send(endpoint, as: Post.self)) } catch {
                        return .failure(error)
                    }
                })
            // One at a time, so that request `index` is transport request `index`; held before the clock moves, so
            // that a request still held later was not answered or cancelled meanwhile.
            try await transport.waitForRequests(index + 1)
            try await transport.waitUntilHeld(index)
        }
        for second in 1...25 {
            for index in 0..<count where answerAt[index] == second && answerAt[index] < timeouts[index] {
                transport.answer(index, json: json(Post(id: "\(index)", title: "t")))
                // The answer has landed before the clock moves on.
                _ = await tasks[index].value
            }
            clock.advance(by: .seconds(1))
            for index in 0..<count where answerAt[index] >= timeouts[index] || answerAt[index] > second {
                if timeouts[index] == second {
                    #expect(await tasks[index].value == .failure(.timeout), "request \(index) at \(second) s")
                } else if timeouts[index] > second {
                    #expect(transport.isHeld(index), "request \(index) ended before its deadline")
                }
            }
        }
        for index in 0..<count {
            let result = await tasks[index].value
            if answerAt[index] < timeouts[index] {
                #expect(result == .success(Post(id: "\(index)", title: "t")), "request \(index)")
            } else {
                #expect(result == .failure(.timeout), "request \(index)")
            }
        }
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0.isEmpty } == [])
    }

    /// Many requests on the real clock, with deadlines and latencies of a few milliseconds each, racing the
    /// scheduler from every thread: every call ends, with its answer or with `.timeout`, and every request
    /// that timed out was cancelled in the transport.
    @Test func deadlinesHoldUnderConcurrentLoad() async throws {
        var random = SeededGenerator(state: 7)
        let plans = (0..<400).map { _ in
            (timeLimit: Duration.milliseconds(random.next() % 20 + 1), latency: random.next() % 20)
        }
        let cancelled = Locked<Set<Int>>([])
        let transport = StubTransport()
        for (index, plan) in plans.enumerated() {
            transport.stub(.get, "/api/posts/\(index)") { request async throws(NetworkError) -> HTTPResponse in
                do {
                    try await Task.sleep(for: .milliseconds(plan.latency))
                } catch {
                    cancelled.withLock { _ = $0.insert(index) }
                    throw .cancelled
                }
                return HTTPResponse(statusCode: 200, body: Data(#"{"id":"\#(index)","title":"t","body":""}"#.utf8))
            }
        }
        let session = makeSession(transport)
        let results = await withTaskGroup(of: (Int, Result<Post, NetworkError>).self) { group in
            for (index, plan) in plans.enumerated() {
                group.addTask {
                    let endpoint = Endpoint(.get, "posts/\(index)", timeLimit: plan.timeLimit)
                    let result: Result<Post, NetworkError>
                    do {
                        result = .success(try await session.send(endpoint, as: Post.self))
                    } catch {
                        result = .failure(NetworkError(error))
                    }
                    return (index, result)
                }
            }
            return await group.reduce(into: [Int: Result<Post, NetworkError>]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == plans.count)
        for (index, result) in results {
            switch result {
            case .success(let post): #expect(post.id == "\(index)")
            case .failure(let error): #expect(error == .timeout, "request \(index)")
            }
        }
        // Only a request that timed out is ever cancelled in the transport.
        for index in cancelled.withLock({ $0 }) {
            #expect(results[index] == .failure(.timeout), "request \(index) was cancelled but did not time out")
        }
    }

    /// Not positive, or above 10⁹ seconds: no deadline (exactly 10⁹ seconds is one, as the docs say:
    /// SessionEdgeTests.aLimitOfExactlyTheLongestIsALimit).
    @Test(arguments: [Duration.zero, .seconds(-1), .seconds(1_000_000_001), .seconds(Int64.max)])
    func unusualTimeLimitsSetNoDeadline(timeLimit: Duration) async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = session(transport, clock: clock)
        var endpoint = Endpoint(.get, "posts/1")
        endpoint.timeLimit = timeLimit
        let task = Task { try await session.send(endpoint, as: Post.self) }
        try await transport.waitForRequests(1)
        #expect(clock.sleepers.isEmpty)
        transport.answer(0, json: json(post))
        #expect(try await task.value == post)
    }

    @Test func theBuiltRequestsTimeoutIsRoundedUpToWholeSeconds() async throws {
        let session = makeSession(StubTransport())
        #expect(
            try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .milliseconds(800)))
                .timeoutInterval == 1)
        #expect(
            try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .seconds(7))).timeoutInterval == 7)
        #expect(
            try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .milliseconds(7200)))
                .timeoutInterval == 8)
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
