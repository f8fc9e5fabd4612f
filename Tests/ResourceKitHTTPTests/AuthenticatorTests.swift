import Foundation
import ResourceKitTesting
import TestSupport
import Testing

@testable import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keeps a token and counts refreshes; a refresh may be held by a latch.
final class TokenStore: Sendable {
    private let state: Watched<(token: String, refreshes: Int)>
    let gate: AsyncLatch?
    let next: @Sendable (Int) throws(NetworkError) -> String

    init(
        _ token: String, gate: AsyncLatch? = nil,
        next: @escaping @Sendable (Int) throws(NetworkError) -> String = { "token-\($0)" }
    ) {
        state = Watched((token, 0))
        self.gate = gate
        self.next = next
    }

    var token: String { state.read { $0.token } }
    var refreshes: Int { state.read { $0.refreshes } }

    func refresh(_ failed: String) async throws(NetworkError) -> String {
        let count = state.withLock { state in
            state.refreshes += 1
            return state.refreshes
        }
        try await gate?.wait()
        let new = try next(count)
        state.withLock { $0.token = new }
        return new
    }

    var authenticator: BearerAuthenticator {
        BearerAuthenticator(
            token: { self.token },
            refresh: { (failed: String) async throws(NetworkError) -> String in try await self.refresh(failed) })
    }
}

/// What the server answers an accepted request with.
private struct Post: Decodable {
    let id: String
    let title: String
}

/// Answers 200 to `Bearer <accepted>` and 401 to anything else.
func acceptingOnly(_ accepted: @escaping @Sendable () -> String) -> ScriptedTransport {
    ScriptedTransport([
        .respond { request in
            let ok = request.value(forHTTPHeaderField: "Authorization") == "Bearer \(accepted())"
            return HTTPResponse(
                statusCode: ok ? 200 : 401, headers: ["Content-Type": "application/json"],
                body: Data((ok ? #"{"id":"1","title":"v","body":""}"# : #"{"message":"expired"}"#).utf8),
                url: request.url)
        }
    ])
}

@Suite(.timeLimit(.minutes(1))) struct AuthenticatorTests {
    let endpoint = Endpoint(.get, "posts/1")

    func session(_ transport: any HTTPTransport, _ store: TokenStore) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport, authenticator: store.authenticator)
    }

    @Test func twentyConcurrentRejectionsShareOneRefreshAndAllSucceed() async throws {
        let gate = AsyncLatch()
        let store = TokenStore("old", gate: gate, next: { _ in "new" })
        let transport = acceptingOnly { "new" }
        let session = session(transport, store)
        let tasks = (0..<20).map { _ in Task { try await session.send(endpoint, as: Post.self) } }
        // Every request is rejected, and waits on the one refresh, before the refresh may finish.
        try await waitUntil("20 requests wait on the refresh") { session.authenticationWaiters == 20 }
        gate.open()
        for task in tasks { #expect(try await task.value.title == "v") }
        #expect(store.refreshes == 1)
        let sent = transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") ?? "" }
        #expect(sent.count == 40)
        #expect(sent.filter { $0 == "Bearer old" }.count == 20)
        #expect(sent.filter { $0 == "Bearer new" }.count == 20)
    }

    @Test func aFailedRefreshFailsEveryWaiterWithTheSameError() async throws {
        let gate = AsyncLatch()
        let store = TokenStore(
            "old", gate: gate, next: { _ throws(NetworkError) in throw .httpStatus(code: 400, body: Data()) })
        let transport = acceptingOnly { "never" }
        let session = session(transport, store)
        let tasks = (0..<5).map { _ in Task { try await session.send(endpoint) } }
        // A rejection that reached the authenticator only after the failed refresh ended would start another.
        try await waitUntil("5 requests wait on the refresh") { session.authenticationWaiters == 5 }
        gate.open()
        for task in tasks {
            await #expect(throws: NetworkError.authenticationFailed(.httpStatus(code: 400, body: Data()))) {
                try await task.value
            }
        }
        #expect(store.refreshes == 1)
        #expect(transport.requestCount == 5)
    }

    @Test func aRequestRejectedWithTheNewCredentialIsNotRefreshedAgain() async throws {
        let store = TokenStore("old")
        let transport = acceptingOnly { "nothing" }
        await #expect(throws: NetworkError.httpStatus(code: 401, body: Data(#"{"message":"expired"}"#.utf8))) {
            try await session(transport, store).send(endpoint)
        }
        #expect(store.refreshes == 1)
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer old", "Bearer token-1",
            ])
    }

    @Test func aRequestRejectedWithAnOlderCredentialRetriesWithTheNewestWithoutARefresh() async throws {
        let store = TokenStore("old")
        let transport = acceptingOnly { "token-1" }
        let session = session(transport, store)
        _ = try await session.send(endpoint, as: Post.self)
        #expect(store.refreshes == 1)

        // A request built with the old token (as one sent before the refresh would be) is answered 401: the
        // session retries it with the newest token and does not refresh.
        let stale = ScriptedTransport([.status(401), .status(200, json: #"{"id":"1","title":"v","body":""}"#)])
        let sharing = NetworkSession(
            baseURL: "http://test.local/api", transport: stale, authenticator: StaleOnce(store: store))
        _ = try await sharing.send(endpoint, as: Post.self)
        #expect(store.refreshes == 1)
        #expect(
            stale.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer old", "Bearer token-1"])
    }

    @Test func waitingForARefreshEndsAtTheDeadlineOrOnCancellation() async throws {
        let gate = AsyncLatch()
        let store = TokenStore("old", gate: gate, next: { _ in "new" })
        let transport = acceptingOnly { "new" }
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, authenticator: store.authenticator,
            timeLimit: .seconds(2),
            clock: clock)
        let timed = Task { try await session.send(endpoint) }
        // The waits only stop a hang: under the thread sanitizer every suite shares two threads for 60-75 s,
        // and the task started here can wait for one most of that time.
        try await waitUntil("the refresh starts") { store.refreshes == 1 }
        try await clock.waitForSleepers(timeout: .seconds(120)) { $0 == [.seconds(2)] }
        clock.advance(by: .seconds(2))
        await #expect(throws: NetworkError.timeout) { try await timed.value }

        let cancelled = Task { try await session.send(endpoint) }
        try await waitUntil("the second request is rejected") { transport.requestCount == 2 }
        cancelled.cancel()
        await #expect(throws: NetworkError.cancelled) { try await cancelled.value }

        // The refresh itself ran on: once it ends, a new request uses its token without refreshing again.
        gate.open()
        try await waitUntil("the new token is stored") { store.token == "new" }
        _ = try await session.send(endpoint, as: Post.self)
        #expect(store.refreshes == 1)
    }

    @Test func noCredentialMeansNoRefresh() async throws {
        let store = TokenStore("unused")
        let transport = ScriptedTransport([.status(401)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            authenticator: BearerAuthenticator(
                token: { nil },
                refresh: { (failed: String) async throws(NetworkError) -> String in try await store.refresh(failed) }))
        await #expect(throws: NetworkError.httpStatus(code: 401, body: Data("{}".utf8))) {
            try await session.send(endpoint)
        }
        #expect(store.refreshes == 0)
        #expect(transport.requests[0].value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func theAuthenticatorStaysOnTheBaseURLsOrigin() async throws {
        let store = TokenStore("old")
        let transport = ScriptedTransport([.status(401)])
        await #expect(throws: NetworkError.self) {
            try await session(transport, store).send(Endpoint(.get, "http://elsewhere.test/posts"))
        }
        #expect(transport.requests[0].value(forHTTPHeaderField: "Authorization") == nil)
        #expect(store.refreshes == 0)
    }

    @Test func aTokenWithALineBreakFailsBeforeAnythingIsSent() async throws {
        let transport = ScriptedTransport([.status(204)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            authenticator: BearerAuthenticator(token: { "a\r\nX-Injected: 1" }, refresh: { $0 }))
        let error = try #require(await #expect(throws: NetworkError.self) { try await session.send(endpoint) })
        guard error.code == .invalidRequest else {
            Issue.record("expected invalidRequest, got \(error)")
            return
        }
        let message = error.message
        #expect(message.contains("Authorization"))
        #expect(transport.requestCount == 0)
    }
}

/// Hands out the old token once (as a request built before a refresh), then the store's current token.
struct StaleOnce: Authenticator {
    let store: TokenStore
    private let handedOut = Locked(false)

    init(store: TokenStore) { self.store = store }

    func credential() async throws(NetworkError) -> String? {
        handedOut.withLock { used in
            defer { used = true }
            return used ? store.token : "old"
        }
    }

    func apply(_ credential: String, to request: inout URLRequest) throws(NetworkError) {
        request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
    }

    func refresh(after failed: String) async throws(NetworkError) -> String { try await store.refresh(failed) }
}
