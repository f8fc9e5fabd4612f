import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The deprecated spellings, each behind a protocol requirement. A deprecated witness may use deprecated API
/// without a warning, and a call through the requirement is not a use of it, so these tests check that the
/// old spellings still compile, unambiguously, and behave as before, under `-warnings-as-errors`.
protocol LegacyAPI: Sendable {
    func endpoint(timeout: TimeInterval?) -> Endpoint
    func endpointWithQueryItems(timeout: TimeInterval?) -> Endpoint
    func literalTimeoutEndpoint() -> Endpoint
    func timeout(of endpoint: Endpoint) -> TimeInterval?
    func setting(timeout: TimeInterval?, on endpoint: Endpoint) -> Endpoint
    func session(_ transport: any HTTPTransport, timeout: TimeInterval, clock: ManualClock) -> NetworkSession
    func literalZeroTimeoutSession() -> NetworkSession
    func timeout(of session: NetworkSession) -> TimeInterval
    func transport(timeout: TimeInterval) -> URLSessionTransport
    func literalZeroTimeoutTransport() -> URLSessionTransport
    var noRedirects: RedirectPolicy { get }
    var notPlaced: ListPlacement { get }
    func waitForRequests(_ count: Int, on stub: StubTransport) async
    func waitForSleepers(on clock: ManualClock, _ condition: @escaping @Sendable ([Duration]) -> Bool) async
        -> [Duration]
}

struct Legacy: LegacyAPI {
    @available(*, deprecated)
    func endpoint(timeout: TimeInterval?) -> Endpoint { Endpoint(.get, "posts/1", timeout: timeout) }

    @available(*, deprecated)
    func endpointWithQueryItems(timeout: TimeInterval?) -> Endpoint {
        Endpoint(.get, "posts", queryItems: [URLQueryItem(name: "tag", value: "a")], timeout: timeout)
    }

    @available(*, deprecated)
    func literalTimeoutEndpoint() -> Endpoint { Endpoint(.get, "posts", timeout: 0) }

    @available(*, deprecated)
    func timeout(of endpoint: Endpoint) -> TimeInterval? { endpoint.timeout }

    @available(*, deprecated)
    func setting(timeout: TimeInterval?, on endpoint: Endpoint) -> Endpoint {
        var endpoint = endpoint
        endpoint.timeout = timeout
        return endpoint
    }

    @available(*, deprecated)
    func session(_ transport: any HTTPTransport, timeout: TimeInterval, clock: ManualClock) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport, timeout: timeout, clock: clock)
    }

    @available(*, deprecated)
    func literalZeroTimeoutSession() -> NetworkSession { NetworkSession(baseURL: "http://test.local/api", timeout: 0) }

    @available(*, deprecated)
    func timeout(of session: NetworkSession) -> TimeInterval { session.timeout }

    @available(*, deprecated)
    func transport(timeout: TimeInterval) -> URLSessionTransport { URLSessionTransport(timeout: timeout) }

    @available(*, deprecated)
    func literalZeroTimeoutTransport() -> URLSessionTransport { URLSessionTransport(timeout: 0) }

    @available(*, deprecated)
    var noRedirects: RedirectPolicy { .none }

    @available(*, deprecated)
    var notPlaced: ListPlacement { .none }

    @available(*, deprecated)
    func waitForRequests(_ count: Int, on stub: StubTransport) async {
        // A call by name reaches the timed wait: the old one only through a function of its type.
        let wait: (Int) async -> Void = stub.waitForRequests
        await wait(count)
    }

    @available(*, deprecated)
    func waitForSleepers(on clock: ManualClock, _ condition: @escaping @Sendable ([Duration]) -> Bool) async
        -> [Duration]
    {
        let wait: (@escaping @Sendable ([Duration]) -> Bool) async -> [Duration] = clock.waitForSleepers
        return await wait(condition)
    }
}

@Suite(.timeLimit(.minutes(1))) struct DeprecatedAPITests {
    let legacy: any LegacyAPI = Legacy()
    let post = Post(id: "1", title: "v")

    @Test func anEndpointsTimeoutInSecondsIsItsTimeLimit() async throws {
        #expect(legacy.endpoint(timeout: 0.8).timeLimit == .milliseconds(800))
        #expect(legacy.endpointWithQueryItems(timeout: 7).timeLimit == .seconds(7))
        #expect(legacy.endpoint(timeout: nil).timeLimit == nil)
        #expect(legacy.timeout(of: Endpoint(.get, "posts", timeLimit: .milliseconds(2500))) == 2.5)
        #expect(legacy.timeout(of: Endpoint(.get, "posts")) == nil)
        #expect(legacy.setting(timeout: 3, on: Endpoint(.get, "posts")).timeLimit == .seconds(3))
        let session = makeSession(StubTransport())
        #expect(try await session.makeURLRequest(for: legacy.endpoint(timeout: 0.8)).timeoutInterval == 1)
    }

    @Test(arguments: [0, -1, TimeInterval.infinity, -TimeInterval.infinity, .nan, 1e9, 1e300])
    func anUnusualTimeoutInSecondsStillMeansNoLimitForTheEndpoint(timeout: TimeInterval) async throws {
        let endpoint = legacy.setting(timeout: timeout, on: Endpoint(.get, "posts/1"))
        #expect(endpoint.timeLimit == .zero)
        #expect(legacy.endpoint(timeout: timeout).timeLimit == .zero)
        #expect(legacy.literalTimeoutEndpoint().timeLimit == .zero)
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = legacy.session(transport, timeout: 5, clock: clock)
        let task = Task { try await session.send(endpoint, as: Post.self) }
        try await transport.waitForRequests(1)
        #expect(clock.sleepers.isEmpty)
        transport.answer(0, json: json(post))
        #expect(try await task.value == post)
    }

    @Test func aSessionsTimeoutInSecondsIsItsTimeLimit() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = legacy.session(transport, timeout: 2.5, clock: clock)
        #expect(session.timeLimit == .milliseconds(2500))
        #expect(legacy.timeout(of: session) == 2.5)
        let task = Task { try await session.send(Endpoint(.get, "posts/1")) }
        #expect(
            try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(2500)] } == [
                .milliseconds(2500)
            ])
        clock.advance(by: .milliseconds(2500))
        await #expect(throws: NetworkError.timeout) { try await task.value }
    }

    @Test(arguments: [0, -1, TimeInterval.nan, .infinity, 1e9])
    func anUnusualSessionTimeoutInSecondsMeansNoLimit(timeout: TimeInterval) {
        let session = legacy.session(StubTransport(), timeout: timeout, clock: ManualClock())
        #expect(session.timeLimit == nil)
        #expect(legacy.timeout(of: session) == 0)
        #expect(legacy.literalZeroTimeoutSession().timeLimit == nil)
    }

    @Test func aTransportsTimeoutInSecondsIsStillClamped() {
        #expect(legacy.transport(timeout: 2.5).session.configuration.timeoutIntervalForRequest == 2.5)
        for unusable in [TimeInterval.nan, .infinity, -.infinity, 1e300, 1e9 + 1, 0, -5] {
            #expect(legacy.transport(timeout: unusable).session.configuration.timeoutIntervalForRequest == 1e9)
        }
        #expect(legacy.literalZeroTimeoutTransport().session.configuration.timeoutIntervalForRequest == 1e9)
        // `.zero` names the `Duration` initializer, which reads it the same way.
        #expect(URLSessionTransport(timeout: .zero).session.configuration.timeoutIntervalForRequest == 1e9)
    }

    @Test func noneIsStillARedirectPolicyThatFollowsNothing() {
        #expect(legacy.noRedirects == .never)
        #expect(legacy.noRedirects.maximumHops == 0)
        #expect(legacy.notPlaced == .omitted)
    }

    @Test func theWaitsWithoutATimeoutStillWait() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", status: 204)
        try await makeSession(stub).send(Endpoint(.get, "posts/1"))
        await legacy.waitForRequests(1, on: stub)

        let clock = ManualClock()
        let sleep = Task { try await clock.sleep(for: .seconds(1)) }
        #expect(await legacy.waitForSleepers(on: clock) { $0 == [.seconds(1)] } == [.seconds(1)])
        sleep.cancel()
        // Cancelled, the old wait returns the pending sleeps as they are, as it did.
        let watcher = Task { await legacy.waitForSleepers(on: clock) { $0.count == 3 } }
        watcher.cancel()
        #expect(await watcher.value == [])
    }
}
