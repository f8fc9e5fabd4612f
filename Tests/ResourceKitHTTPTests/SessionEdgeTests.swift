import Foundation
import ResourceKitTesting
import Synchronization
import TestSupport
import Testing

@testable import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the session's documentation promises at its edges: limits, methods, descriptions and counts.
@Suite(.timeLimit(.minutes(1))) struct SessionEdgeTests {
    let session = NetworkSession(baseURL: "http://test.local/api")

    /// An inactivity timeout that means none falls back to the endpoint's time limit, as `nil` does.
    @Test(arguments: [Duration?.none, .zero, .seconds(-3), .seconds(2_000_000_000)])
    func anInactivityTimeoutThatMeansNoneFallsBackToTheTimeLimit(inactivity: Duration?) async throws {
        var endpoint = Endpoint(.get, "posts", timeLimit: .milliseconds(4200))
        endpoint.inactivityTimeout = inactivity
        #expect(try await session.makeURLRequest(for: endpoint).timeoutInterval == 5)
        endpoint.inactivityTimeout = .seconds(2)
        #expect(try await session.makeURLRequest(for: endpoint).timeoutInterval == 2)
    }

    /// The session's time limit sets the transport's timer too, so that its 60 s never end a call the session
    /// allows longer; an endpoint's limit wins, and a streamed upload does not take the session's.
    @Test func theSessionsLimitSetsTheTransportsTimer() async throws {
        let session = NetworkSession(baseURL: "http://test.local/api", timeLimit: .seconds(119.5))
        #expect(try await session.makeURLRequest(for: Endpoint(.get, "posts")).timeoutInterval == 120)
        #expect(
            try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .seconds(10))).timeoutInterval
                == 10)
        let unlimited = try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .zero))
        #expect(unlimited.timeoutInterval == URLRequest(url: URL(fileURLWithPath: "/")).timeoutInterval)
        let upload = Endpoint(.post, "files", body: .stream(InputStream(data: Data("x".utf8))))
        #expect(try await session.makeURLRequest(for: upload).timeoutInterval != 120)
    }

    /// A limit of exactly 10⁹ seconds is a limit; only one above it means none.
    @Test func aLimitOfExactlyTheLongestIsALimit() {
        #expect(NetworkSession.deadline(.seconds(1_000_000_000)) == .seconds(1_000_000_000))
        #expect(NetworkSession.deadline(.seconds(1_000_000_000) + .nanoseconds(1)) == nil)
        #expect(NetworkSession.deadline(.zero) == nil)
    }

    /// A method that is not an RFC 9110 token never reaches the transport.
    @Test(arguments: ["", "GET /admin", "PATCH\r\nX-Evil: 1", "DEL\tETE", "PO(ST)", "MÉTHODE"])
    func aMethodThatIsNotATokenIsRefused(method: String) async throws {
        let transport = ScriptedTransport([.status(200)])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport)
        let endpoint = Endpoint(HTTPMethod(rawValue: method), "posts")
        await #expect(throws: NetworkError.self) { try await session.makeURLRequest(for: endpoint) }
        do {
            _ = try await session.response(for: endpoint)
            Issue.record("sent")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("RFC 9110 token"))
        }
        #expect(transport.requestCount == 0)
    }

    @Test func anExtensionMethodThatIsATokenIsSent() async throws {
        let request = try await session.makeURLRequest(for: Endpoint(HTTPMethod(rawValue: "propfind"), "posts"))
        #expect(request.httpMethod == "PROPFIND")
    }

    /// An error's description is one line, whatever the body or message it quotes.
    @Test func anErrorsDescriptionIsOneLine() {
        let body = Data("<html>\n<body>\r\nBad gateway\u{2028}</body>\n</html>".utf8)
        let status = NetworkError.httpStatus(code: 502, body: body)
        #expect(status.description == "HTTP status 502: <html> <body> Bad gateway </body> </html>")
        let server = ServerError(status: 400, message: "Failed\nto create", fieldErrors: ["title": "Missing\nvalue"])
        #expect(server.description == "Server error 400: Failed to create (title: Missing value)")
        #expect(NetworkError.server(server).description == server.description)
        #expect(NetworkError.transport(code: .unknown, message: "a\nb").description.contains("\n") == false)
        var event = DiagnosticEvent(.requestFailed)
        event.error = status
        #expect(!event.description.contains("\n"))
        #expect(!event.description.contains("\r"))
    }

    /// `bufferingNewest: .max`, "all of them", keeps the most a listener can, and does not trap.
    @Test func aHugeDiagnosticsLimitDoesNotTrap() async throws {
        let transport = ScriptedTransport([.status(200, json: #"{"id":"1"}"#)])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport)
        let events = session.diagnostics(bufferingNewest: .max)
        _ = try await session.response(for: Endpoint(.get, "posts/1"))
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next()?.kind == .requestStarted)
    }

    /// A debounce too long for the clock is clamped to 10⁹ seconds: the indicator stays on, nothing traps.
    @Test func aHugeActivityDebounceDoesNotTrap() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(200, json: #"{"id":"1"}"#)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, clock: clock,
            activityDebounce: .seconds(Int64.max))
        #expect(session.activity.debounce == .seconds(1_000_000_000))
        #expect(!session.activity.isBusy)  // watched from here on
        _ = try await session.response(for: Endpoint(.get, "posts/1"))
        #expect(session.activity.status == NetworkActivity.Status(requestsInFlight: 0, isBusy: true))
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1_000_000_000)] }
        clock.advance(by: .seconds(1_000_000_000))
        try await waitUntil("the indicator off") { !session.activity.isBusy }
    }

    /// A watch that starts between the counter's add and the activity hearing of it counts the call once.
    @Test func aWatchStartedAsACallBeginsCountsItOnce() {
        let counter = ActivityCounter(debounce: .zero, timeline: Timeline(ContinuousClock()))
        counter.began()  // counted; no activity to tell yet
        let activity = counter.watcher { NetworkActivity(counter: counter) }
        #expect(activity.requestsInFlight == 1)
        activity.began()  // the late half of the same call's `began`
        #expect(activity.status == NetworkActivity.Status(requestsInFlight: 1, isBusy: true))
        counter.ended()
        #expect(activity.status == NetworkActivity.Status(requestsInFlight: 0, isBusy: false))
        // And an end heard after the watch started from a count that had already lost it.
        counter.began()
        #expect(activity.requestsInFlight == 1)
        activity.ended()  // an end the activity hears twice, once through the counter below
        counter.ended()
        #expect(activity.status == NetworkActivity.Status(requestsInFlight: 0, isBusy: false))
    }
}

/// Extreme values on the session's public entries: clamped, never a trap or a hang.
@Suite(.timeLimit(.minutes(1))) struct ExtremeValueTests {
    /// A range from a code up, or to `Int.max`, accepts every three-digit code from its start; an endless
    /// sequence is read up to a bound instead of forever.
    @Test func statusRangesAreCutToHTTPsCodes() {
        #expect(StatusCodeValidation(acceptable: 200...).acceptable == Set(200...999))
        #expect(StatusCodeValidation(acceptable: 200..<Int.max).acceptable == Set(200...999))
        #expect(StatusCodeValidation(acceptable: Int.min...Int.max).acceptable == Set(100...999))
        #expect(StatusCodeValidation(acceptable: 5000...).acceptable.isEmpty)
        #expect(StatusCodeValidation(acceptable: 200..<200).acceptable.isEmpty)
        #expect(StatusCodeValidation().acceptable == Set(200..<300))
        #expect(StatusCodeValidation(acceptable: [204, 304, 42, 1000]).acceptable == [204, 304])
        let endless = sequence(first: 204) { _ in 204 }
        #expect(StatusCodeValidation(acceptable: endless).acceptable == [204])
    }

    /// A `Retry-After` past 10⁹ seconds is 10⁹ seconds: a clock traps on a deadline far beyond it.
    @Test func aHugeRetryAfterIsTheLongestWait() {
        #expect(RetryAfter.delay(in: ["Retry-After": "\(Int64.max)"]) == .longest)
        #expect(RetryAfter.delay(in: ["Retry-After": "99999999999999999999"]) == .longest)
        #expect(RetryAfter.delay(in: ["Retry-After": "1000000001"]) == .longest)
        #expect(RetryAfter.delay(in: ["Retry-After": "120"]) == .seconds(120))
        #expect(RetryAfter.delay(in: ["Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"]) == .longest)
    }

    /// A time past what nanoseconds in 64 bits count is the largest count, not a trap in `components`.
    @Test func aHugeDurationHasTheLargestNanosecondCount() {
        #expect(Duration.seconds(Int64.max).clampedNanoseconds == .max)
        #expect(Duration.seconds(1e20).clampedNanoseconds == .max)
        #expect(Duration.seconds(-1e20).clampedNanoseconds == .min)
        #expect(Duration.seconds(2).clampedNanoseconds == 2_000_000_000)
    }

    /// A session whose clock reads far in the future still sends, and its events still tell the time.
    @Test func aSessionOnAClockFarInTheFutureStillSends() async throws {
        let clock = ManualClock()
        for _ in 0..<3 { clock.advance(by: .seconds(Int64.max)) }
        #expect(clock.now.offset == .seconds(3_000_000_000))
        let transport = ScriptedTransport([.status(200, json: #"{"id":"1"}"#)])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport, clock: clock)
        let events = session.diagnostics()
        _ = try await session.response(for: Endpoint(.get, "posts/1"))
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next()?.kind == .requestStarted)
    }
}

/// Adapters and the authenticator are part of an attempt: the time limit covers them.
@Suite(.timeLimit(.minutes(1))) struct AdapterDeadlineTests {
    /// An adapter that waits until it is cancelled, and counts its cancellations.
    final class StuckAdapter: RequestAdapting {
        let cancellations = Atomic<Int>(0)
        let calls = Atomic<Int>(0)

        func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
            calls.add(1, ordering: .relaxed)
            let stream = AsyncStream<Never> { _ in }
            for await _ in stream {}
            cancellations.add(1, ordering: .relaxed)
            throw .cancelled
        }
    }

    @Test func aStuckAdapterEndsAtTheDeadline() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(200, json: #"{"id":"1"}"#)])
        let adapter = StuckAdapter()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, adapters: [adapter], timeLimit: .seconds(2),
            clock: clock)
        let call = Task { try await session.response(for: Endpoint(.get, "posts/1")) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(2)] }
        clock.advance(by: .seconds(2))
        await #expect(throws: NetworkError.timeout) { try await call.value }
        try await waitUntil("the adapter cancelled") { adapter.cancellations.load(ordering: .relaxed) == 1 }
        #expect(adapter.calls.load(ordering: .relaxed) == 1)
        #expect(transport.requestCount == 0)
    }

    /// An adapter that answers at once changes nothing: the request goes with what it added.
    @Test func aQuickAdapterRunsWithinTheLimit() async throws {
        struct Stamp: RequestAdapting {
            func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
                var request = request
                request.setValue("1", forHTTPHeaderField: "X-Stamp")
                return request
            }
        }
        let transport = ScriptedTransport([.status(200, json: #"{"id":"1"}"#)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, adapters: [Stamp()], timeLimit: .seconds(2))
        _ = try await session.response(for: Endpoint(.get, "posts/1"))
        #expect(transport.requests.first?.value(forHTTPHeaderField: "X-Stamp") == "1")
    }
}
