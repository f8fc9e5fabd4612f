import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The PocketBase realtime protocol on stubs: what is posted, when, and what reaches the store.
@Suite(.timeLimit(.minutes(1))) struct PocketBaseRealtimeTests {
    let stub = StubTransport()
    let clock = ManualClock()
    /// Each realtime connection's writer, in order.
    let writers = Locked<[ResponseBody.Writer]>([])
    /// Opened when connection n (from 0) arrives.
    let arrived = (0..<4).map { _ in AsyncLatch() }

    init() {
        let writers = writers
        let arrived = arrived
        stub.stubStreaming(.get, "/api/realtime") { request in
            let (body, writer) = ResponseBody.makeStream()
            let count = writers.withLock { writers in
                writers.append(writer)
                return writers.count
            }
            if count <= arrived.count { arrived[count - 1].open() }
            return StreamedResponse(
                statusCode: 200, headers: ["Content-Type": "text/event-stream"], url: request.url, body: body)
        }
        stub.stub(.post, "/api/realtime", status: 204)
        stub.stub(.get, "/api/posts/42", json: json(Post(id: "42", title: "Hello")))
        stub.stub(
            .get, "/api/posts",
            json:
                #"{"page":1,"perPage":50,"totalItems":1,"totalPages":1,"items":[{"id":"42","title":"Hello","body":""}]}"#
        )
    }

    var session: NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: stub, timeLimit: nil, clock: clock)
    }

    func send(_ text: String, on connection: Int = 0) throws {
        let writer = try #require(writers.withLock { $0.count > connection ? $0[connection] : nil })
        #expect(writer.yield(Data(text.utf8)))
    }

    func connect(_ clientID: String, on connection: Int = 0) async throws {
        try await arrived[connection].wait()
        try send("id:\(clientID)\nevent:PB_CONNECT\ndata:{\"clientId\":\"\(clientID)\"}\n\n", on: connection)
    }

    /// The subscription posts so far, as (client, topics).
    var posts: [(String, [String])] {
        struct Body: Decodable { var clientId: String; var subscriptions: [String] }
        return stub.requests.filter { $0.httpMethod == "POST" }.compactMap { request in
            request.httpBody.flatMap { try? JSONDecoder().decode(Body.self, from: $0) }.map {
                ($0.clientId, $0.subscriptions)
            }
        }
    }

    func waitForPosts(_ count: Int) async throws {
        try await waitUntil("\(count) subscription posts") { posts.count >= count }
    }

    var reads: Int {
        stub.requests.filter { $0.httpMethod == "GET" && $0.url?.path.hasSuffix("/realtime") == false }.count
    }

    @Test func subscriptionsFollowWhatTheStoreHolds() async throws {
        let store = ResourceStore(session: session)
        var feed: ListResource<RemoteFeed>? = store.list(RemoteFeed.self, request: "latest")
        let realtime = PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts")
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        #expect(posts.last?.0 == "c1")
        #expect(posts.last?.1 == ["posts/*"])
        // A resource while a list holds the type: the collection still covers it.
        let post = store.resource(RemotePost.self, id: "42")
        // The list goes: the record's own topic.
        feed = nil
        _ = feed
        try await waitUntil("the record's topic") { posts.last?.1 == ["posts/42"] }
        // Nothing held: nothing subscribed.
        _ = consume post
        try await waitUntil("no topics") { posts.last?.1 == [] }
        #expect(posts.allSatisfy { $0.0 == "c1" })
    }

    @Test func changesReachTheStoreAndUndecodableOnesAreSkipped() async throws {
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let readsBefore = reads
        let live = Task {
            try await PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts").run(
                in: store)
        }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        try send(
            "event:posts/42\ndata:{\"action\":\"update\",\"record\":{\"id\":\"42\",\"title\":\"Pushed\",\"body\":\"\"}}\n\n"
        )
        try await waitUntil("the push") { post.state.value?.title == "Pushed" }
        // A record that is not a post, an unknown collection, an unknown action, garbage: all skipped.
        try send("event:posts/42\ndata:{\"action\":\"update\",\"record\":{\"id\":42}}\n\n")
        try send(
            "event:comments/*\ndata:{\"action\":\"delete\",\"record\":{\"id\":\"42\",\"title\":\"x\",\"body\":\"\"}}\n\n"
        )
        try send(
            "event:posts/42\ndata:{\"action\":\"rename\",\"record\":{\"id\":\"42\",\"title\":\"x\",\"body\":\"\"}}\n\n")
        try send("event:posts/42\ndata:not json\n\n")
        try send(
            "event:posts/42?options=%7B%7D\ndata:{\"action\":\"delete\",\"record\":{\"id\":\"42\",\"title\":\"Pushed\",\"body\":\"\"}}\n\n"
        )
        try await waitUntil("the deletion") { post.state == .idle }
        #expect(reads == readsBefore)
    }

    @Test func aReconnectionPostsForTheNewClientAndResyncsOnce() async throws {
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "latest")
        try await post.read("42")
        try await feed.refresh()
        let postStates = post.recordStates()
        let feedStates = feed.recordStates()
        defer {
            postStates.stop()
            feedStates.stop()
        }
        let opened = Watched<[Int]>([])
        let realtime = PocketBaseRealtime(
            session: session, reconnect: ReconnectPolicy(initialDelay: .seconds(1), jitter: .none),
            onOpen: { number in opened.withLock { $0.append(number) } }
        ).following(RemotePost.self, collection: "posts")
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        try await waitUntil("opened") { opened.value == [1] }
        let readsBefore = reads
        // The server closes the stream (PocketBase's idle close); after 1 s the source connects again.
        writers.withLock { $0[0] }.finish()
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        try await connect("c2", on: 1)
        try await waitUntil("reopened") { opened.value == [1, 2] }
        #expect(posts.map(\.0) == ["c1", "c2"])
        #expect(posts.last?.1 == ["posts/*"])
        // What is observed is read again, once each: the resource and the list's first page.
        try await waitUntil("resync") { reads == readsBefore + 2 }
        #expect(stub.requests.suffix(2).compactMap(\.url?.path).sorted() == ["/api/posts", "/api/posts/42"])
    }

    @Test func aFailedSubscriptionPostIsTriedAgainAfterTheReconnectionWait() async throws {
        let attempts = Locked(0)
        stub.stub(.post, "/api/realtime") { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return HTTPResponse(statusCode: attempt == 1 ? 503 : 204, url: request.url)
        }
        let store = ResourceStore(session: session)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let opened = Watched<[Int]>([])
        let realtime = PocketBaseRealtime(
            session: session, reconnect: ReconnectPolicy(initialDelay: .seconds(2), jitter: .none),
            onOpen: { number in opened.withLock { $0.append(number) } }
        ).following(RemotePost.self, collection: "posts")
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        // The first post failed: not open yet, and the next try waits 2 s.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(2)) }
        #expect(opened.withLock { $0 }.isEmpty)
        clock.advance(by: .seconds(2))
        try await waitUntil("opened") { opened.value == [1] }
        #expect(posts.count == 2)
        #expect(posts.allSatisfy { $0.0 == "c1" && $0.1 == ["posts/*"] })
        _ = feed
    }

    @Test func aRefusedSubscriptionStopsTheSourceWithTheServersError() async throws {
        stub.stub(
            .post, "/api/realtime", status: 403,
            json:
                #"{"status":403,"message":"The current and the previous request authorization don't match.","data":{}}"#
        )
        let store = ResourceStore(session: session)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let live = Task {
            try await PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts").run(
                in: store)
        }
        try await connect("c1")
        let error = await #expect(throws: NetworkError.self) { try await live.value }
        #expect(error?.statusCode == 403)
        _ = feed
    }

    @Test func manyRecordsAreFollowedAsTheirCollection() async throws {
        let store = ResourceStore(session: session)
        let held = (0..<201).map { store.resource(RemotePost.self, id: "p\($0)") }
        let live = Task {
            try await PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts").run(
                in: store)
        }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        #expect(posts.last?.1 == ["posts/*"])
        #expect(held.count == 201)
    }

    @Test func cancellingStopsTheSource() async throws {
        let store = ResourceStore(session: session)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let live = Task {
            try await PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts").run(
                in: store)
        }
        try await connect("c1")
        try await waitForPosts(1)
        live.cancel()
        await #expect(throws: NetworkError.cancelled) { try await live.value }
        _ = feed
        clock.advance(by: .seconds(60))
        #expect(writers.withLock { $0.count } == 1)
    }

    /// A lost client (PocketBase answers the subscription post with `404`: the stream reached another server,
    /// or the server forgot it) drops its stream and connects again; the new client's post follows what the
    /// store holds, holders made later included, and what is observed is read again once.
    @Test func aLostClientReconnectsAndFollowsWhatTheStoreHoldsAgain() async throws {
        // Opens when the new client's post follows the whole collection.
        let followsCollection = AsyncLatch()
        stub.stub(.post, "/api/realtime") { request in
            struct Body: Decodable { var clientId: String; var subscriptions: [String] }
            let body = request.httpBody.flatMap { try? JSONDecoder().decode(Body.self, from: $0) }
            guard body?.clientId == "c1" else {
                if body?.subscriptions == ["posts/*"] { followsCollection.open() }
                return HTTPResponse(statusCode: 204, url: request.url)
            }
            return HTTPResponse(
                statusCode: 404,
                body: Data(#"{"status":404,"message":"Missing or invalid client id.","data":{}}"#.utf8),
                url: request.url)
        }
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let postStates = post.recordStates()
        let opened = Watched<[Int]>([])
        let open = AsyncLatch()
        let realtime = PocketBaseRealtime(
            session: session, reconnect: ReconnectPolicy(initialDelay: .seconds(1), jitter: .none),
            onOpen: { number in
                opened.withLock { $0.append(number) }
                open.open()
            }
        ).following(RemotePost.self, collection: "posts")
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        // The post for c1 is answered 404: the stream goes, and a new one comes at once, with no wait.
        try await arrived[1].wait()
        #expect(writers.withLock { $0[0] }.yield(Data(": still there?\n".utf8)) == false)
        try await connect("c2", on: 1)
        try await open.wait()
        #expect(opened.withLock { $0 } == [2])
        #expect(posts.map(\.0) == ["c1", "c2"])
        #expect(posts.last?.1 == ["posts/42"])
        // The gap is closed: the observed resource is read again, once.
        _ = try await postStates.waitForCount(3)
        postStates.stop()
        #expect(stub.requests.filter { $0.url?.path == "/api/posts/42" }.count == 2)
        // A holder made after the reconnection is followed on the new client.
        let later = store.list(RemoteFeed.self, request: "latest")
        try await followsCollection.wait()
        #expect(posts.last?.0 == "c2")
        #expect(posts.last?.1 == ["posts/*"])
        extendLifetime(later)
    }

    /// A server that forgets every client: each new stream waits as the reconnection policy says, and past its
    /// attempts the source stops with the `404`. It tells each wait, then its end; no connection of it opened.
    @Test func aServerThatLosesEveryClientBacksOffThenStops() async throws {
        stub.stub(
            .post, "/api/realtime", status: 404,
            json: #"{"status":404,"message":"Missing or invalid client id.","data":{}}"#)
        let store = ResourceStore(session: session)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let statuses = Watched<[String]>([])
        let realtime = source(telling: statuses, maximumAttempts: 3)
        let live = Task { try await realtime.run(in: store) }
        try await connect("c1")
        // Lost once: reconnects at once.
        try await connect("c2", on: 1)
        // Lost twice in a row: waits 1 s first.
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(1)) }
        #expect(writers.withLock { $0.count } == 2)
        clock.advance(by: .seconds(1))
        try await connect("c3", on: 2)
        let error = await #expect(throws: NetworkError.self) { try await live.value }
        #expect(error?.statusCode == 404)
        #expect(posts.map(\.0) == ["c1", "c2", "c3"])
        #expect(
            statuses.value == [
                "reconnecting 0, in 0.0 seconds, failures 1, status 404",
                "reconnecting 0, in 1.0 seconds, failures 2, status 404",
                "finished 0, status 404",
            ])
        extendLifetime(feed)
    }
}
