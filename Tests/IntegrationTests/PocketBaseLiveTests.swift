import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitInspection
import ResourceKitPocketBase
import ResourceKitTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Posts of one test run, newest position first; a created one goes first.
private struct LivePosts: Listable {
    typealias Value = PBPost
    typealias Item = PBPost
    typealias ListRequest = Int
    typealias ListResponse = PageEnvelope<PBPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for marker: Int) -> Endpoint {
        Endpoint(.get, "posts/records", query: ["filter": "userId=\(marker)", "sort": "-position"])
    }
    static func placement(ofCreated item: PBPost, in marker: Int) -> ListPlacement {
        item.userId == marker ? .start : .omitted
    }
}

/// The same posts by title; a created one goes last.
private struct LivePostsByTitle: Listable {
    typealias Value = PBPost
    typealias Item = PBPost
    typealias ListRequest = Int
    typealias ListResponse = PageEnvelope<PBPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for marker: Int) -> Endpoint {
        Endpoint(.get, "posts/records", query: ["filter": "userId=\(marker)", "sort": "title"])
    }
    static func placement(ofCreated item: PBPost, in marker: Int) -> ListPlacement {
        item.userId == marker ? .end : .omitted
    }
}

/// A record of a collection only superusers may list or view.
private struct Secret: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
}

private struct RemoteSecret: Readable {
    typealias Value = Secret
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "secrets/records").appending(id: id) }
}

/// Counts the requests a session sends, realtime ones aside.
private final class RequestCounter: RequestAdapting, Sendable {
    let count = Atomic<Int>(0)
    func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        if request.url?.path.contains("/realtime") != true { count.add(1, ordering: .relaxed) }
        return request
    }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A post of one test run: its `userId` is the run's marker.
private struct NewLivePost: Encodable, Sendable {
    var title: String
    var body: String
    var userId: Int
    var position: Int
}

@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .serialized, .timeLimit(.minutes(2)))
struct PocketBaseLiveTests {
    let marker = Int.random(in: 100_000...999_999)
    /// Positions after every seeded post, so that the suites walking the seeded posts by position never see
    /// this run's.
    let base = Int.random(in: 10_000_000...99_999_999)

    /// Device B: an anonymous session for its store, and one for its realtime connection (perhaps through a
    /// proxy), with an inactivity timeout longer than the test: PocketBase sends nothing between events.
    fileprivate func deviceB(counter: RequestCounter, realtimeURL: String) -> (
        store: ResourceStore, realtime: NetworkSession
    ) {
        let store = ResourceStore(
            session: NetworkSession(
                baseURL: (PocketBase.url ?? "") + "/api/collections", validation: PocketBaseValidation(),
                transport: URLSessionTransport(timeout: .seconds(45)), adapters: [counter]))
        let realtime = NetworkSession(
            baseURL: realtimeURL + "/api", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(600)))
        return (store, realtime)
    }

    func source(
        _ session: NetworkSession, opened: AsyncStream<Int>.Continuation,
        statuses: Locked<[EventStreamStatus]> = Locked([])
    ) -> PocketBaseRealtime {
        PocketBaseRealtime(
            session: session,
            reconnect: ReconnectPolicy(
                initialDelay: .milliseconds(100), maximumDelay: .milliseconds(400), jitter: .none),
            onOpen: { opened.yield($0) },
            onStatus: { status in statuses.withLock { $0.append(status) } }
        )
        .following(RemotePBPost.self, collection: "posts")
        .following(RemoteSecret.self, collection: "secrets")
    }

    /// The superuser's session (device A) and a record in the superusers-only `secrets` collection.
    fileprivate func deviceA() async throws -> (session: NetworkSession, secret: Secret) {
        let a = try await PocketBase.authenticated()
        let admin = NetworkSession(
            baseURL: (PocketBase.url ?? "") + "/api", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)), adapters: a.configuration.adapters)
        struct Field: Encodable { var name: String; var type: String }
        struct Collection: Encodable {
            var name = "secrets"
            var type = "base"
            var fields = [Field(name: "title", type: "text")]
            // Both rules `null`: superusers only.
            var listRule: String? = nil
            var viewRule: String? = nil
            func encode(to encoder: any Encoder) throws {
                enum Keys: String, CodingKey { case name, type, fields, listRule, viewRule }
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(name, forKey: .name)
                try container.encode(type, forKey: .type)
                try container.encode(fields, forKey: .fields)
                try container.encodeNil(forKey: .listRule)
                try container.encodeNil(forKey: .viewRule)
            }
        }
        if (try? await admin.response(for: Endpoint(.get, "collections/secrets"))) == nil {
            _ = try await admin.response(for: Endpoint(.post, "collections", body: .json(Collection())))
        }
        struct NewSecret: Encodable, Sendable { var title: String }
        let secret: Secret = try await a.send(
            Endpoint(.post, "secrets/records", body: .json(NewSecret(title: "hidden \(marker)"))))
        return (a, secret)
    }

    fileprivate func createPost(_ post: NewLivePost) -> Endpoint { Endpoint(.post, "posts/records", body: .json(post)) }

    /// Deletes the posts this run made.
    func cleanUp(_ a: NetworkSession) async throws {
        let page: PageEnvelope<PBPost> = try await a.send(LivePosts.listEndpoint(for: marker))
        for post in page.items { let _: EmptyResponse = try await a.send(RemotePBPost.deleteEndpoint(for: post)) }
    }

    @Test func anotherDevicesChangesShowWithNoRequestAndRulesHoldBackWhatBMayNotSee() async throws {
        let (a, secret) = try await deviceA()
        let counter = RequestCounter()
        let (store, realtimeSession) = deviceB(counter: counter, realtimeURL: PocketBase.url ?? "")
        // Two posts of this run, made by A.
        let first: PBPost = try await a.send(
            createPost(NewLivePost(title: "b first", body: "1", userId: marker, position: base + 1)))
        let second: PBPost = try await a.send(
            createPost(NewLivePost(title: "a second", body: "2", userId: marker, position: base + 2)))

        // B shows one post and two lists of them, and holds the secret, which it may not read.
        let post = store.resource(RemotePBPost.self, id: first.id)
        let byPosition = store.list(LivePosts.self, request: marker)
        let byTitle = store.list(LivePostsByTitle.self, request: marker)
        let hidden = store.resource(RemoteSecret.self, id: secret.id)
        try await post.read(first.id)
        try await byPosition.refresh()
        try await byTitle.refresh()
        _ = try? await hidden.read(secret.id)
        #expect(hidden.state.value == nil)
        let postStates = post.recordStates()
        let positionStates = byPosition.recordStates()
        let titleStates = byTitle.recordStates()
        let hiddenStates = hidden.recordStates()

        let (opened, open) = AsyncStream.makeStream(of: Int.self)
        let statuses = Locked<[EventStreamStatus]>([])
        let live = Task { try await source(realtimeSession, opened: open, statuses: statuses).run(in: store) }
        defer { live.cancel() }
        var openings = opened.makeAsyncIterator()
        #expect(await openings.next() == 1)
        let readsBefore = counter.value

        // A updates: B's resource and both lists show it.
        var edited = first
        edited.title = "b first, edited"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: edited))
        try await postStates.wait(timeout: .seconds(10)) { $0.last?.value?.title == "b first, edited" }
        try await positionStates.wait(timeout: .seconds(10)) {
            $0.last?.items.first { $0.id == first.id }?.title == "b first, edited"
        }
        try await titleStates.wait(timeout: .seconds(10)) {
            $0.last?.items.first { $0.id == first.id }?.title == "b first, edited"
        }

        // A creates: first in one list, last in the other.
        let third: PBPost = try await a.send(
            createPost(NewLivePost(title: "c third", body: "3", userId: marker, position: base + 3)))
        try await positionStates.wait(timeout: .seconds(10)) {
            $0.last?.items.map(\.id) == [third.id, second.id, first.id]
        }
        try await titleStates.wait(timeout: .seconds(10)) {
            $0.last?.items.map(\.id) == [second.id, first.id, third.id]
        }

        // A deletes: gone from both lists, and B's resource of it is empty.
        let _: EmptyResponse = try await a.send(RemotePBPost.deleteEndpoint(for: edited))
        try await positionStates.wait(timeout: .seconds(10)) { $0.last?.items.map(\.id) == [third.id, second.id] }
        try await titleStates.wait(timeout: .seconds(10)) { $0.last?.items.map(\.id) == [second.id, third.id] }
        try await postStates.wait(timeout: .seconds(10)) { $0.last == .idle }

        // A changes the secret, then a post: the post's change arrives; the secret's never does.
        struct Title: Encodable, Sendable { var title: String }
        let _: Secret = try await a.send(
            Endpoint(.patch, "secrets/records", body: .json(Title(title: "changed"))).appending(id: secret.id))
        var renamed = second
        renamed.title = "a second, renamed"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: renamed))
        try await titleStates.wait(timeout: .seconds(10)) { $0.last?.items.first?.title == "a second, renamed" }
        // PocketBase sends each event from its own goroutine: give a secret event that lost that race a bound.
        let lateSecret = try? await hiddenStates.wait(timeout: .seconds(1)) { $0.contains { $0.value != nil } }
        #expect(lateSecret == nil)
        #expect(hidden.state.value == nil)

        // None of it cost B a request.
        #expect(counter.value == readsBefore)
        try await cleanUp(a)
    }

    @Test func aCutConnectionReconnectsAndResyncsWhatWasMissed() async throws {
        let (a, _) = try await deviceA()
        let upstream = try #require(URL(string: PocketBase.url ?? "")?.port)
        let proxy = try CuttableProxy(to: UInt16(upstream))
        defer { proxy.stop() }
        let counter = RequestCounter()
        let (store, realtimeSession) = deviceB(counter: counter, realtimeURL: "http://127.0.0.1:\(proxy.port)")
        let made: PBPost = try await a.send(
            createPost(NewLivePost(title: "before", body: "", userId: marker, position: base)))
        let post = store.resource(RemotePBPost.self, id: made.id)
        let feed = store.list(LivePosts.self, request: marker)
        try await post.read(made.id)
        try await feed.refresh()
        let postStates = post.recordStates()
        let feedStates = feed.recordStates()

        let (opened, open) = AsyncStream.makeStream(of: Int.self)
        let statuses = Locked<[EventStreamStatus]>([])
        let live = Task { try await source(realtimeSession, opened: open, statuses: statuses).run(in: store) }
        defer { live.cancel() }
        var openings = opened.makeAsyncIterator()
        #expect(await openings.next() == 1)
        let readsBefore = counter.value

        // Cut: a change made now reaches B by no event.
        proxy.cut()
        var edited = made
        edited.title = "while cut"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: edited))
        let missed = try? await postStates.wait(timeout: .seconds(1)) { $0.last?.value?.title == "while cut" }
        #expect(missed == nil)

        // Restored: B reconnects, subscribes again, and revalidates what it observes, once.
        proxy.restore()
        #expect(await openings.next() == 2)
        try await postStates.wait(timeout: .seconds(10)) { $0.last?.value?.title == "while cut" }
        try await feedStates.wait(timeout: .seconds(10)) { $0.last?.items.first?.title == "while cut" }
        // One read of the resource and one of the list's first page.
        #expect(counter.value == readsBefore + 2)

        // And live again.
        edited.title = "after"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: edited))
        try await feedStates.wait(timeout: .seconds(10)) { $0.last?.items.first?.title == "after" }
        #expect(counter.value == readsBefore + 2)
        try await cleanUp(a)

        // What an app showed meanwhile: live, the cut connection closed, one wait or more while
        // the proxy refused, live again; then, cancelled, the end.
        live.cancel()
        _ = try? await live.value
        let told = statuses.withLock { $0 }
        #expect(told.first?.kind == .opened && told.first?.connection == 1)
        #expect(told.dropFirst().first?.kind == .closed && told.dropFirst().first?.connection == 1)
        let waits = told.dropFirst(2).prefix { $0.kind == .reconnecting }
        #expect(!waits.isEmpty)
        #expect(
            told.dropFirst(2 + waits.count).map { "\($0.kind) \($0.connection) \($0.error?.code.name ?? "-")" } == [
                "opened 2 -", "closed 2 cancelled", "finished 2 cancelled",
            ], "\(told)")
    }

    @Test func whatNobodyHoldsIsUnsubscribedAsTheServerLogs() async throws {
        let (a, _) = try await deviceA()
        let admin = NetworkSession(
            baseURL: (PocketBase.url ?? "") + "/api", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)), adapters: a.configuration.adapters)
        // PocketBase logs each client's new subscription set at its debug level.
        struct Settings: Encodable, Sendable { var logs = ["minLevel": -4] }
        _ = try await admin.response(for: Endpoint(.patch, "settings", body: .json(Settings())))
        // The server's log times, on this machine's clock: entries from here on are this test's.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS'Z'"
        let start = formatter.string(from: Date())
        let counter = RequestCounter()
        let (store, realtimeSession) = deviceB(counter: counter, realtimeURL: PocketBase.url ?? "")
        var made: PBPost = try await a.send(
            createPost(NewLivePost(title: "held", body: "", userId: marker, position: base)))
        var feed: ListResource<LivePosts>? = store.list(LivePosts.self, request: marker)
        try await feed?.refresh()
        // Every change that reaches B's store shows in its session's diagnostic feed as store news.
        let arrived = AsyncLatch()
        let news = store.session.diagnostics()
        let watching = Task {
            for await event in news where event.kind == .storeNews && event.itemType == "PBPost" { arrived.open() }
        }
        defer { watching.cancel() }
        let (opened, open) = AsyncStream.makeStream(of: Int.self)
        let live = Task { try await source(realtimeSession, opened: open).run(in: store) }
        defer { live.cancel() }
        var openings = opened.makeAsyncIterator()
        #expect(await openings.next() == 1)
        let subscribed = try await subscriptionLog(admin) {
            $0.created ?? "" >= start && $0.subscriptions == ["posts/*"]
        }
        // Subscribed: A's change reaches B's store.
        made.title = "seen"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: made))
        try await arrived.wait()
        // Nobody holds the list any more: B posts an empty set for its client.
        feed = nil
        _ = feed
        #expect(store.liveHolders(of: RemotePBPost.self).isEmpty)
        let emptied = try await subscriptionLog(admin) { $0.clientId == subscribed.clientId && $0.subscriptions == [] }
        #expect((emptied.created ?? "") > (subscribed.created ?? ""))
        // A's next change reaches no one: no news in B's store within a bound that the subscribed one met.
        let silence = AsyncLatch()
        let quiet = Task {
            for await event in store.session.diagnostics() where event.kind == .storeNews { silence.open() }
        }
        defer { quiet.cancel() }
        made.title = "unseen"
        let _: PBPost = try await a.send(RemotePBPost.updateEndpoint(for: made))
        let late = Task { try await silence.wait() }
        let bound = Task {
            try await Task.sleep(for: .seconds(2))
            late.cancel()
        }
        #expect((try? await late.value) == nil)
        bound.cancel()
        try await cleanUp(a)
    }

    struct SubscriptionLog: Decodable, Sendable {
        var clientId: String?
        var subscriptions: [String]?
        /// Not in the log's data: the entry's time, filled in from it.
        var created: String?
    }

    /// The newest "Realtime subscriptions updated" entry of the server's log that `matches`, waiting up to 20 s
    /// for the server to write its batch of logs.
    func subscriptionLog(_ admin: NetworkSession, _ matches: @escaping @Sendable (SubscriptionLog) -> Bool)
        async throws -> SubscriptionLog
    {
        struct Entry: Decodable { var created: String; var data: SubscriptionLog }
        struct Page: Decodable { var items: [Entry] }
        let endpoint = Endpoint(
            .get, "logs", query: ["filter": "message~'Realtime subscriptions'", "sort": "-created", "perPage": "20"])
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        // lint-waits: PocketBase writes its request logs in the background and signals nothing; read them again.
        while clock.now < deadline {
            let page: Page = try await admin.send(endpoint)
            for entry in page.items {
                var log = entry.data
                log.created = entry.created
                if matches(log) { return log }
            }
            try await clock.sleep(for: .milliseconds(500))
        }
        throw WaitError(description: "no matching subscription log in 20 s")
    }
}
