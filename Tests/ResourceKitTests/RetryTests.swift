import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries run on a `ManualClock`: every wait is read from the clock and ended by advancing it, never slept.
/// The sessions set no deadline unless a test is about one, so the only sleep pending is the retry's wait.
@Suite(.timeLimit(.minutes(1))) struct RetryTests {
    let post = Post(id: "1", title: "v")
    let endpoint = Endpoint(.get, "posts/1")

    func session(
        _ transport: any HTTPTransport,
        retry: RetryPolicy,
        clock: ManualClock,
        timeLimit: Duration? = nil,
        logger: any NetworkLogging = SilentLogger()
    ) -> NetworkSession {
        NetworkSession(
            baseURL: "http://test.local/api", transport: transport, retry: retry, timeLimit: timeLimit, clock: clock,
            logger: logger)
    }

    static let exact = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(500), jitter: .none)

    @Test func retriesWithExactAttemptsAndExponentialBackoff() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(503), .status(200, json: json(post))])
        let logger = EventCollector()
        let session = session(transport, retry: Self.exact, clock: clock, logger: logger)
        let task = Task { try await session.send(endpoint, as: Post.self) }

        #expect(
            try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] } == [
                .milliseconds(500)
            ])
        #expect(transport.requestCount == 1)
        clock.advance(by: .milliseconds(499))
        #expect(transport.requestCount == 1)
        clock.advance(by: .milliseconds(1))
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] } == [.seconds(1)])
        #expect(transport.requestCount == 2)
        clock.advance(by: .seconds(1))

        #expect(try await task.value == post)
        #expect(transport.requestCount == 3)
        let retries = logger.events.compactMap { event -> (Int, Duration)? in
            guard event.kind == .retry, let attempt = event.attempt, let delay = event.delay else { return nil }
            #expect(event.url == "http://test.local/api/posts/1")
            #expect(event.error?.statusCode == 503)
            return (attempt, delay)
        }
        #expect(retries.map(\.0) == [1, 2])
        #expect(retries.map(\.1) == [.milliseconds(500), .seconds(1)])
        #expect(logger.events.filter { $0.kind == .requestStarted }.count == 3)
    }

    @Test func givesUpAfterTheLastAttemptWithItsError() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(500, json: #"{"n":1}"#), .status(502, json: #"{"n":2}"#)])
        let session = session(transport, retry: RetryPolicy(maximumAttempts: 2, jitter: .none), clock: clock)
        let task = Task { try await session.send(endpoint, as: Post.self) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        await #expect(throws: NetworkError.httpStatus(code: 502, body: Data(#"{"n":2}"#.utf8))) { try await task.value }
        #expect(transport.requestCount == 2)
    }

    @Test func backoffIsCappedAndFullJitterDrawsBelowIt() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(503), .status(503), .status(204)])
        let policy = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(400), multiplier: 4, maximumDelay: .seconds(2),
            jitter: .full(using: { 0.25 }))
        let session = session(transport, retry: policy, clock: clock)
        let task = Task { try await session.send(endpoint) }
        // 400 ms, 1.6 s, then 6.4 s capped at 2 s; each a quarter of that with the injected draw.
        for wait in [Duration.milliseconds(100), .milliseconds(400), .milliseconds(500)] {
            #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [wait] } == [wait])
            clock.advance(by: wait)
        }
        try await task.value
        #expect(transport.requestCount == 4)
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func retryableStatuses(status: Int) async throws {
        try await expectOneRetry(after: .status(status))
    }

    /// The first answer fails with `failure`; the call waits the first backoff and succeeds on attempt two.
    func expectOneRetry(after failure: ScriptedTransport.Answer) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([failure, .status(200, json: json(post))])
        let session = session(transport, retry: Self.exact, clock: clock)
        let task = Task { try await session.send(endpoint, as: Post.self) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        #expect(try await task.value == post)
        #expect(transport.requestCount == 2)
    }

    @Test(arguments: [400, 401, 403, 404, 409, 422, 501])
    func otherStatusesAreNotRetried(status: Int) async throws {
        let transport = ScriptedTransport([.status(status), .status(200, json: json(post))])
        let session = session(transport, retry: Self.exact, clock: ManualClock())
        await #expect(throws: NetworkError.httpStatus(code: status, body: Data("{}".utf8))) {
            try await session.send(endpoint, as: Post.self)
        }
        #expect(transport.requestCount == 1)
    }

    @Test(arguments: [
        NetworkError.timeout, .transport(code: .networkConnectionLost, message: "lost"),
        .transport(code: .cannotConnectToHost, message: "refused"), .transport(code: .timedOut, message: "slow"),
        .transport(code: .notConnectedToInternet, message: "offline"),
    ])
    func transientTransportErrorsAreRetried(error: NetworkError) async throws {
        try await expectOneRetry(after: .failure(error))
    }

    @Test(arguments: [
        NetworkError.transport(code: .cannotFindHost, message: "no host"),
        .transport(code: .secureConnectionFailed, message: "tls"), .invalidResponse("odd"),
    ])
    func otherTransportErrorsAreNotRetried(error: NetworkError) async throws {
        let transport = ScriptedTransport([.failure(error), .status(200, json: json(post))])
        let session = session(transport, retry: Self.exact, clock: ManualClock())
        await #expect(throws: error) { try await session.send(endpoint, as: Post.self) }
        #expect(transport.requestCount == 1)
    }

    @Test func nonIdempotentMethodsAreRetriedOnlyWhenOptedIn() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503)])
        let session = session(transport, retry: Self.exact, clock: clock)
        for method in [HTTPMethod.post, .patch] {
            await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) {
                try await session.send(Endpoint(method, "posts", body: .json(post)))
            }
        }
        #expect(transport.requestCount == 2)

        let keyed = ScriptedTransport([.status(503), .status(201, json: json(post))])
        let keyedSession = self.session(keyed, retry: Self.exact, clock: clock)
        let task = Task {
            try await keyedSession.send(
                Endpoint(.post, "posts", headers: ["idempotency-key": "k1"], body: .json(post)), as: Post.self)
        }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        #expect(try await task.value == post)
        // The retry sends the very body of the first attempt.
        let bodies = keyed.requests.map(\.httpBody)
        #expect(bodies.count == 2 && bodies[0] == bodies[1])
        #expect(try JSONDecoder().decode(Post.self, from: #require(bodies[1])) == post)
    }

    @Test func retryAfterInSecondsReplacesTheBackoff() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(429, headers: ["Retry-After": "7"]), .status(200, json: json(post))])
        let session = session(transport, retry: Self.exact, clock: clock)
        let task = Task { try await session.send(endpoint, as: Post.self) }
        #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(7)] } == [.seconds(7)])
        clock.advance(by: .seconds(7))
        #expect(try await task.value == post)
    }

    @Test func retryAfterAsAnHTTPDateIsMeasuredFromNow() async throws {
        let clock = ManualClock()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: Date().addingTimeInterval(3600))
        let transport = ScriptedTransport([.status(503, headers: ["Retry-After": date]), .status(204)])
        var policy = Self.exact
        policy.maximumRetryAfter = .seconds(7200)
        let session = session(transport, retry: policy, clock: clock)
        let task = Task { try await session.send(endpoint) }
        // HTTP dates have whole seconds, and the wall clock moves on while the test runs (slowly under the
        // thread sanitizer): the wait is an hour less the time since the date was written.
        let waits = try await clock.waitForSleepers(timeout: .seconds(30)) {
            $0.count == 1 && $0[0] > .seconds(3000) && $0[0] <= .seconds(3600)
        }
        clock.advance(by: waits[0])
        try await task.value
        #expect(transport.requestCount == 2)
    }

    @Test func aRetryAfterBeyondTheMaximumEndsTheRequestWithItsHeaders() async throws {
        let transport = ScriptedTransport([.status(503, headers: ["Retry-After": "120"]), .status(204)])
        let session = session(transport, retry: Self.exact, clock: ManualClock())
        let error = try #require(await #expect(throws: NetworkError.self) { try await session.send(endpoint) })
        #expect(error.statusCode == 503)
        #expect(error.headers?["retry-after"] == "120")
        #expect(error.retryAfter == .seconds(120))
        #expect(transport.requestCount == 1)
    }

    @Test func noRetryWouldEndPastTheDeadline() async throws {
        let transport = ScriptedTransport([.status(503), .status(204)])
        let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(2), jitter: .none)
        let session = session(transport, retry: policy, clock: ManualClock(), timeLimit: .milliseconds(1500))
        // The clock never moves: a wait would hang until the time limit.
        await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) {
            try await session.send(endpoint)
        }
        #expect(transport.requestCount == 1)
    }

    @Test func cancellationDuringTheWaitEndsTheRequestWithoutAnotherAttempt() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(204)])
        let session = session(transport, retry: Self.exact, clock: clock)
        let task = Task { try await session.send(endpoint) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        clock.advance(by: .seconds(10))
        #expect(clock.sleepers.isEmpty)
        #expect(transport.requestCount == 1)
    }

    @Test func anEndpointsPolicyReplacesTheSessions() async throws {
        let transport = ScriptedTransport([.status(503), .status(204)])
        let session = session(transport, retry: Self.exact, clock: ManualClock())
        var once = endpoint
        once.retry = .never
        await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) {
            try await session.send(once)
        }
        #expect(transport.requestCount == 1)

        let plain = ScriptedTransport([.status(503), .status(204)])
        let clock = ManualClock()
        let neverRetries = self.session(plain, retry: .never, clock: clock)
        var retried = endpoint
        retried.retry = Self.exact
        let task = Task { try await neverRetries.send(retried) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        try await task.value
        #expect(plain.requestCount == 2)
    }

    @Test func aResourceStaysLoadingThroughItsRetries() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(502), .status(200, json: json(post))])
        let resource = Resource<RemotePost>(session: session(transport, retry: Self.exact, clock: clock))
        let recorder = resource.recordStates()
        let task = Task { try await resource.read("1") }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] }
        clock.advance(by: .milliseconds(500))
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        _ = try await task.value
        try await recorder.expect([.idle, .loading(previous: nil), .available(post)])
        #expect(transport.requestCount == 3)
    }

    @Test(arguments: [
        RetryPolicy(maximumAttempts: 0), RetryPolicy(maximumAttempts: -3),
        RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(-1), jitter: .none),
        RetryPolicy(maximumAttempts: 2, multiplier: .nan, jitter: .none),
        RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(Int64.max), multiplier: .infinity, jitter: .none),
        RetryPolicy(maximumAttempts: 2, maximumDelay: .seconds(-5), jitter: .full(using: { .nan })),
    ])
    func absurdPoliciesNeitherCrashNorHang(policy: RetryPolicy) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(204)])
        let session = session(transport, retry: policy, clock: clock)
        let task = Task { try await session.send(endpoint) }
        // Whatever the policy waits, time moves on until the call ends.
        let mover = Task {
            while !Task.isCancelled {
                try await clock.waitForSleepers(timeout: .seconds(30)) { !$0.isEmpty }
                clock.advance(by: .seconds(1_000_000_000))
            }
        }
        let result = await task.result
        mover.cancel()
        if policy.maximumAttempts >= 2 {
            #expect(throws: Never.self) { try result.get() }
            #expect(transport.requestCount == 2)
        } else {
            #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) { try result.get() }
            #expect(transport.requestCount == 1)
        }
    }

    @Test(arguments: ["-5", "soon", "99999999999999999999999", "Tue, 99 Foo 2026 00:00:00 GMT", ""])
    func unreadableOrHugeRetryAfterNeverCrashes(value: String) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503, headers: ["Retry-After": value]), .status(204)])
        let session = session(transport, retry: Self.exact, clock: clock)
        let task = Task { try await session.send(endpoint) }
        if value == "99999999999999999999999" {
            // Longer than the maximum: not retried.
            await #expect(throws: NetworkError.httpStatus(code: 503, body: Data("{}".utf8))) { try await task.value }
            #expect(transport.requestCount == 1)
        } else {
            // Unreadable: the computed backoff applies.
            #expect(
                try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(500)] } == [
                    .milliseconds(500)
                ])
            clock.advance(by: .milliseconds(500))
            try await task.value
            #expect(transport.requestCount == 2)
        }
    }
}
