import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The logger is a consumer of the diagnostics feed: the same events, built once, each at its level.
@Suite(.timeLimit(.minutes(1))) struct LoggingTests {
    let post = Post(id: "1", title: "One")

    /// A redirected read, then a read the server refuses: every kind a request emits, and a resource's states.
    func exercise(_ session: NetworkSession) async {
        let resource = Resource<RemotePost>(session: session)
        _ = try? await resource.read("1")
        _ = try? await resource.read("2")
    }

    func transport() -> ScriptedTransport {
        ScriptedTransport([
            .status(302, headers: ["Location": "http://test.local/api/posts/one?token=t0k"]),
            .status(200, json: json(post)), .status(404),
        ])
    }

    /// A resource's events reach a logger at ``LogLevel/debug``, and one that takes only `info` and above hears
    /// of the requests' retries and failures alone.
    @Test func aResourcesEventsAreDebugEventsOfTheLogger() async throws {
        let debug = EventCollector()
        await exercise(makeSession(transport(), logger: debug))
        let objectKinds: Set<DiagnosticEvent.Kind> = [
            .stateChanged, .cacheHit, .joined, .operationFinished, .storeNews,
        ]
        let logged = zip(debug.events, debug.levels).filter { objectKinds.contains($0.0.kind) }
        #expect(
            logged.map(\.0.kind) == [
                .stateChanged, .stateChanged, .operationFinished, .stateChanged, .stateChanged, .operationFinished,
            ])
        #expect(logged.allSatisfy { $0.1 == .debug })
        let info = EventCollector(minimumLevel: .info)
        await exercise(makeSession(transport(), logger: info))
        #expect(info.events.map(\.kind) == [.requestFailed])
        #expect(info.levels == [.error])
    }

    @Test func theLoggerReceivesExactlyWhatTheDiagnosticsStreamReceivesInOrder() async throws {
        let logger = EventCollector()
        let session = makeSession(transport(), logger: logger)
        let stream = session.diagnostics()
        await exercise(session)
        let streamed = await eventsUntilMarker(stream, session: session)
        let logged = logger.events.prefix { $0.url?.hasSuffix("/marker") != true }.map { line($0) }
        #expect(logged == streamed)
        #expect(
            logged == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | GET | http://test.local/api/posts/1 | attempt 1",
                "redirect | GET | http://test.local/api/posts/1 | status 302",
                "requestFinished | GET | http://test.local/api/posts/1 | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
                "stateChanged | Resource<RemotePost> | available → loading",
                "requestStarted | GET | http://test.local/api/posts/2 | attempt 1",
                "requestFinished | GET | http://test.local/api/posts/2 | attempt 1 | status 404",
                "requestFailed | GET | http://test.local/api/posts/2 | attempt 1 | error httpStatus",
                "stateChanged | Resource<RemotePost> | loading → failure(httpStatus)",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
        let redirect = try #require(logger.events.first { $0.kind == .redirect })
        #expect(redirect.location == "http://test.local/api/posts/one?token=redacted")
        #expect(!logger.events.map(\.description).joined().contains("t0k"))
    }

    /// Reads the resource whose state changed, from inside `log`: under the resource's lock, it would wait
    /// for itself.
    final class ReadingLogger: NetworkLogging {
        let resource = Locked<Resource<RemotePost>?>(nil)
        let seen = Locked<[ResourceState<Post>]>([])
        let minimumLevel = LogLevel.debug
        func log(_ level: LogLevel, _ event: DiagnosticEvent) {
            guard event.kind == .stateChanged, let resource = resource.withLock({ $0 }) else { return }
            let state = resource.state
            seen.withLock { $0.append(state) }
        }
    }

    @Test func aLoggerMayReadTheResourceWhoseStateChanged() async throws {
        let logger = ReadingLogger()
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]), logger: logger)
        let resource = Resource<RemotePost>(session: session)
        logger.resource.withLock { $0 = resource }
        #expect(try await resource.read("1") == post)
        // Each read of the state came after the change it was told of.
        #expect(logger.seen.withLock { $0 } == [.loading(previous: nil), .available(post)])
    }

    @Test func eachEventComesAtItsLevel() async throws {
        let logger = EventCollector()
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(503), .status(503)]),
            retry: RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(1), jitter: .none), timeLimit: nil,
            clock: clock, logger: logger)
        let task = Task { try await session.send(Endpoint(.get, "posts")) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        await #expect(throws: NetworkError.self) { try await task.value }
        let kinds = logger.events.map(\.kind)
        #expect(
            kinds == [.requestStarted, .requestFinished, .retry, .requestStarted, .requestFinished, .requestFailed])
        #expect(logger.levels == [.debug, .debug, .info, .debug, .debug, .error])
    }

    @Test func aCallCancelledWhileWaitingToRetryEndsWithRequestFailed() async throws {
        let logger = EventCollector()
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(503)]),
            retry: RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(1), jitter: .none), timeLimit: nil,
            clock: clock, logger: logger)
        let task = Task { try await session.send(Endpoint(.get, "posts")) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(logger.events.map(\.kind) == [.requestStarted, .requestFinished, .retry, .requestFailed])
        #expect(logger.events.last?.error == .cancelled)
        #expect(logger.events.last?.attempt == 1)
        #expect(logger.levels.last == .error)
    }

    @Test(arguments: [(LogLevel.error, ["requestFailed"]), (.info, ["retry", "requestFailed"])])
    func aLoggerAboveDebugReceivesOnlyItsLevelsAndNoObjectEvents(level: LogLevel, kinds: [String]) async throws {
        let logger = EventCollector(minimumLevel: level)
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(503), .status(503)]),
            retry: RetryPolicy(maximumAttempts: 2, initialDelay: .seconds(1), jitter: .none), timeLimit: nil,
            clock: clock, logger: logger)
        let resource = Resource<RemotePost>(session: session)
        let task = Task { try await resource.read("1") }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        await #expect(throws: NetworkError.self) { try await task.value }
        #expect(logger.events.map(\.kind.name) == kinds)
        #expect(logger.events.allSatisfy { $0.url == "http://test.local/api/posts/1" && $0.error?.statusCode == 503 })
    }

    @Test func secretsOfTheRequestNeverReachTheLogger() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/me", status: 500, headers: ["Set-Cookie": "session=secret"], body: Data("{}".utf8))
        let logger = EventCollector()
        let session = NetworkSession(
            baseURL: "http://user:secret@test.local/api", transport: stub, defaultHeaders: ["Cookie": "c=secret"],
            adapters: [BearerTokenAdapter(token: "secret-token")], logger: logger)
        await #expect(throws: NetworkError.self) {
            try await session.data(for: Endpoint(.get, "me", query: ["api_key": "secret"]))
        }
        #expect(logger.events.map(\.kind) == [.requestStarted, .requestFinished, .requestFailed])
        #expect(logger.events.last?.error?.headers?["Set-Cookie"] == "<redacted>")
        #expect(!logger.events.map(\.description).joined().contains("secret"))
        #expect(stub.requests.first?.value(forHTTPHeaderField: "Authorization") == "Bearer secret-token")
    }
}
