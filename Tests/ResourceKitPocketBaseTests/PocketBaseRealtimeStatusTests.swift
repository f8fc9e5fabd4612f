import Foundation
import ResourceKit
import ResourceKitPocketBase
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `PocketBaseRealtime` tells `onStatus`, as exact sequences, on the suite's stubs.
extension PocketBaseRealtimeTests {
    /// A status as one comparable line: kind, connection, and the wait, failures and error code when present.
    static func line(_ status: EventStreamStatus) -> String {
        var parts = ["\(status.kind) \(status.connection)"]
        if let delay = status.delay { parts.append("in \(delay)") }
        if status.failures > 0 { parts.append("failures \(status.failures)") }
        if let error = status.error { parts.append(error.statusCode.map { "status \($0)" } ?? "\(error.code)") }
        return parts.joined(separator: ", ")
    }

    /// A source following posts, waiting 1 s before its first reconnection, that appends each status it tells
    /// to `statuses` as a ``line(_:)``.
    func source(
        telling statuses: Watched<[String]>, maximumAttempts: Int? = nil, onOpen: (@Sendable (Int) -> Void)? = nil
    ) -> PocketBaseRealtime {
        PocketBaseRealtime(
            session: session,
            reconnect: ReconnectPolicy(initialDelay: .seconds(1), jitter: .none, maximumAttempts: maximumAttempts),
            onOpen: onOpen, onStatus: { status in statuses.withLock { $0.append(Self.line(status)) } }
        ).following(RemotePost.self, collection: "posts")
    }

    /// Answers each subscription post with the status `answer` gives for its number (from 1) and client id.
    func answerPosts(_ answer: @escaping @Sendable (_ number: Int, _ clientID: String?) -> Int) {
        let count = Locked(0)
        stub.stub(.post, "/api/realtime") { request in
            struct Body: Decodable { var clientId: String }
            let body = request.httpBody.flatMap { try? JSONDecoder().decode(Body.self, from: $0) }
            let number = count.withLock { count in
                count += 1
                return count
            }
            return HTTPResponse(statusCode: answer(number, body?.clientId), url: request.url)
        }
    }

    /// A store holding post 42, and a source on it telling `statuses`, whose first connection (client c1) has
    /// opened.
    func startOpened() async throws -> (
        store: ResourceStore, post: Resource<RemotePost>, statuses: Watched<[String]>, live: Task<Void, any Error>
    ) {
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let statuses = Watched<[String]>([])
        let realtime = source(telling: statuses)
        let live = Task { try await realtime.run(in: store) }
        try await connect("c1")
        try await waitUntil("opened 1") { statuses.value == ["opened 1"] }
        return (store, post, statuses, live)
    }

    /// The statuses of a source that opens, loses its connection, waits, opens again and is cancelled: each
    /// connection is `opened` once its subscriptions land and `closed` once, the wait is told before it, and
    /// the end comes last, before `run` returns.
    @Test func statusesTellEachConnectionTheWaitBeforeTheNextAndTheEnd() async throws {
        let (_, post, statuses, live) = try await startOpened()
        // The server ends the stream: the connection closes, and the next waits 1 s.
        writers.withLock { $0[0] }.finish()
        try await waitUntil("a wait") { statuses.value.count == 3 }
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        try await connect("c2", on: 1)
        try await waitUntil("opened 2") { statuses.value.count == 4 }
        live.cancel()
        await #expect(throws: NetworkError.self) { try await live.value }
        #expect(
            statuses.value == [
                "opened 1", "closed 1", "reconnecting 1, in 1.0 seconds", "opened 2", "closed 2, cancelled",
                "finished 2, cancelled",
            ])
        extendLifetime(post)
    }

    /// A client the server forgets after its connection opened: that connection is closed with the `404`, the
    /// source says it connects again at once, and the new connection opens.
    @Test func aLostClientClosesItsConnectionAndEachNewAttemptIsTold() async throws {
        // The first post (c1's) lands, the second (c1's again) is answered 404; c2's land.
        answerPosts { number, clientID in clientID == "c1" && number > 1 ? 404 : 204 }
        let (store, post, statuses, live) = try await startOpened()
        defer { live.cancel() }
        // A new holder makes the source post again, for c1: the server has forgotten it.
        let feed = store.list(RemoteFeed.self, request: "latest")
        try await connect("c2", on: 1)
        try await waitUntil("opened 2") { statuses.value.last == "opened 2" }
        #expect(
            statuses.value == [
                "opened 1", "closed 1, status 404", "reconnecting 1, in 0.0 seconds, failures 1, status 404",
                "opened 2",
            ])
        extendLifetime((post, feed))
    }

    /// A connection whose stream closes before its subscriptions land was never live: it is told neither
    /// `opened` nor `closed`, only the wait before the next connection, which opens as the first. (`onOpen`
    /// still counts it, as it always did.)
    @Test func aConnectionThatClosesBeforeItsSubscriptionsLandIsNeverToldOpen() async throws {
        let postArrived = AsyncLatch()
        let release = AsyncLatch()
        stub.stub(.post, "/api/realtime") { request in
            struct Body: Decodable { var clientId: String }
            let body = request.httpBody.flatMap { try? JSONDecoder().decode(Body.self, from: $0) }
            if body?.clientId == "c1" {
                postArrived.open()
                try await release.wait()
            }
            return HTTPResponse(statusCode: 204, url: request.url)
        }
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let statuses = Watched<[String]>([])
        let opened = Watched<[Int]>([])
        let realtime = source(telling: statuses, onOpen: { number in opened.withLock { $0.append(number) } })
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        try await postArrived.wait()
        writers.withLock { $0[0] }.finish()
        try await waitUntil("a wait") { !statuses.value.isEmpty }
        release.open()
        try await waitUntil("onOpen 1") { opened.value == [1] }
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        try await connect("c2", on: 1)
        try await waitUntil("opened") { statuses.value.count == 2 }
        // Numbered among the connections told open; onOpen numbers client ids.
        #expect(statuses.value == ["reconnecting 0, in 1.0 seconds", "opened 1"])
        #expect(opened.value == [1, 2])
        extendLifetime(post)
    }

    /// A subscription the server refuses stops the source: the open connection is closed with the refusal, not
    /// with the cancellation the source's own tasks see on their way out, and the end carries the refusal too.
    @Test func aRefusalClosesTheOpenConnectionWithItself() async throws {
        answerPosts { number, _ in number == 1 ? 204 : 403 }
        let (store, post, statuses, live) = try await startOpened()
        // A new holder makes the source post again: refused.
        let feed = store.list(RemoteFeed.self, request: "latest")
        let error = await #expect(throws: NetworkError.self) { try await live.value }
        #expect(error?.statusCode == 403)
        #expect(statuses.value == ["opened 1", "closed 1, status 403", "finished 1, status 403"])
        extendLifetime((post, feed))
    }
}
