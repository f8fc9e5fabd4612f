import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport in front of another that drops what a server ignoring preconditions ignores (PocketBase), or
/// the validators of its answers (a server that sends none).
struct StrippingTransport: HTTPTransport {
    let base: any HTTPTransport
    var dropsPreconditions = false
    var dropsEntityTags = false

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var request = request
        if dropsPreconditions {
            request.setValue(nil, forHTTPHeaderField: "If-Match")
            request.setValue(nil, forHTTPHeaderField: "If-Unmodified-Since")
        }
        var response = try await base.send(request)
        if dropsEntityTags { response.headers["ETag"] = nil }
        return response
    }
}

/// A transport that answers every write `412` with an empty body while `refuses` is set: a server that refuses
/// every precondition.
struct RefusingTransport: HTTPTransport {
    final class Switch: Sendable {
        let isOn = Locked(false)
    }

    let base: any HTTPTransport
    let refuses: Switch
    /// Whether reads are refused too (`403`) while `refuses` is on.
    var refusesReads = false

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if refuses.isOn.withLock({ $0 }) {
            if request.httpMethod != "GET" { throw .httpStatus(code: 412, body: Data()) }
            if refusesReads { throw .httpStatus(code: 403, body: Data()) }
        }
        return try await base.send(request)
    }
}

/// An outbox storage whose next `store` (one only, when `holds` is set) waits for `holds` to be signalled, after
/// opening `storeStarted`: it blocks the outbox's own queue, never a task.
final class HeldStores: EntryStorage {
    let base: FileEntryStorage
    let holds = Locked<DispatchSemaphore?>(nil)
    let storeStarted = AsyncLatch()

    init(_ base: FileEntryStorage) { self.base = base }

    func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try base.entry(for: key) }
    func store(_ entries: [PersistedEntry]) throws(NetworkError) {
        if let hold = holds.withLock({ hold in
            defer { hold = nil }
            return hold
        }) {
            storeStarted.open()
            hold.wait()
        }
        try base.store(entries)
    }
    func removeEntries(for keys: [String]) throws(NetworkError) { try base.removeEntries(for: keys) }
    func removeAll() throws(NetworkError) { try base.removeAll() }
    func allKeys() throws(NetworkError) -> [String] { try base.allKeys() }
}

/// A transport whose writes to `path`, once `armed`, wait until `release` opens (after opening `entered`).
final class GatedPath: HTTPTransport {
    let base: any HTTPTransport
    let path: String
    let armed = Locked(false)
    let entered = AsyncLatch()
    let release = AsyncLatch()

    init(base: any HTTPTransport, path: String) {
        self.base = base
        self.path = path
    }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if request.httpMethod != "GET", request.url?.path == path, armed.withLock({ $0 }) {
            entered.open()
            try await release.wait()
        }
        return try await base.send(request)
    }
}

/// A transport that answers a refused write's `412` with the body of another item (`43`).
struct WrongItemOn412: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if response.statusCode == 412 { response.body = Data(json(Post(id: "43", title: "Bye")).utf8) }
        return response
    }
}

/// A transport whose answers carry their `ETag` as a weak one.
struct WeakTags: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if let tag = response.headers["ETag"] { response.headers["ETag"] = "W/" + tag }
        return response
    }
}

/// A transport that passes writes on and answers them with an empty `200`: an answer no value decodes from.
struct EmptyWriteAnswers: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if request.httpMethod != "GET", response.statusCode == 200 { response.body = Data() }
        return response
    }
}

/// `RemotePost` updated by a dictionary of fields: it makes no update request of a value.
struct RemoteTitlePost: Readable, Updatable {
    typealias Value = Post
    typealias ReadRequest = String
    typealias UpdateRequest = [String: String]
    static let persistenceName = "title-posts"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for fields: [String: String]) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(fields)).appending(id: "42")
    }
}

/// `RemotePost` whose version is its content, as PocketBase's `updated` field would be.
struct RemoteStampedPost: Readable, Updatable, Deletable {
    typealias Value = Post
    typealias ReadRequest = String
    typealias DeleteRequest = Post
    static let persistenceName = "stamped-posts"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemotePost.updateEndpoint(for: post) }
    static func deleteEndpoint(for post: Post) -> Endpoint { RemotePost.deleteEndpoint(for: post) }
    static func version(of post: Post) -> ItemVersion? { ItemVersion(post.title + "|" + post.body) }
}

/// The feed of `RemoteFeed`, with each post's content as its version, read one by one as `RemoteStampedPost`.
struct RemoteStampedFeed: Listable, Updatable, Deletable {
    typealias Value = Post
    typealias Item = Post
    typealias ListRequest = String
    typealias ListResponse = PageEnvelope<Post>
    typealias DeleteRequest = Post
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for feed: String) -> Endpoint { RemoteFeed.listEndpoint(for: feed) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemoteFeed.updateEndpoint(for: post) }
    static func deleteEndpoint(for post: Post) -> Endpoint { RemoteFeed.deleteEndpoint(for: post) }
    static func version(of post: Post) -> ItemVersion? { RemoteStampedPost.version(of: post) }
}

/// A merge of posts field by field: each field as the side that changed it has it (mine when both did).
let mergeFields: @Sendable (Post?, Post, Post) throws -> Post = { base, mine, theirs in
    Post(
        id: mine.id, title: mine.title != base?.title ? mine.title : theirs.title,
        body: mine.body != base?.body ? mine.body : theirs.body)
}

/// Kept changes whose item someone else changed meanwhile: sent with preconditions, held or resolved, never
/// sent over the other change and never dropped unasked.
extension OutboxTests {
    /// Another device: a session of its own on the same server, online.
    func otherDevice(_ post: Post) async throws {
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        _ = try await session.send(RemotePost.updateEndpoint(for: post), as: Post.self)
    }

    /// Device A reads post 42 and edits its title offline; device B then changes its body online. Returns A's
    /// store, resource and change id, and the `ETag` A read.
    func conflictingEdit(
        queueing: [OfflineQueueing] = [.resources(RemotePost.self)], transport: (any HTTPTransport)? = nil
    ) async throws -> (store: ResourceStore, post: Resource<RemotePost>, id: String, tag: String) {
        let store = try launch(queueing: queueing, transport: transport)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let tag = try #require(try await servedTag("42"))
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        return (store, post, id, tag)
    }

    func servedTag(_ id: String) async throws -> String? {
        try await NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            .response(for: RemotePost.readEndpoint(for: id)).headers["ETag"]
    }

    @Test func aReplayedUpdateCarriesIfMatchAndAConflictIsHeldWithTheThreeValues() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, id, tag) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox)
        backend.clearLog()
        await outbox.replay()
        try await reports.arrived.wait()
        // One write, conditional on the version A read; the server refused it.
        #expect(writes.map(\.method) == [.patch])
        #expect(writes.first?.headers["If-Match"] == tag)
        #expect(try serverPost("42") == Post(id: "42", title: "Hello", body: "Theirs"))
        // Held and shown: A's screen still shows its edit; nothing was dropped.
        #expect(outbox.pending.map(\.id) == [id])
        #expect(outbox.pending.first?.isHeld == true)
        #expect(post.value == Post(id: "42", title: "Mine"))
        let held = try #require(outbox.held.first)
        #expect(outbox.held.count == 1)
        #expect(held.id == id)
        #expect(held.resolution == nil)
        #expect(held.error == nil)
        #expect(held.isDeletedOnServer == false)
        #expect(held.base(as: Post.self) == Post(id: "42", title: "Hello"))
        #expect(held.mine(as: Post.self) == Post(id: "42", title: "Mine"))
        #expect(held.theirs(as: Post.self) == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(held.change.base?.entityTag == tag)
        #expect(reports.all.map(\.id) == [id])
        #expect(reports.all.first?.resolution == nil)
        // A held change is not sent again by a later replay.
        backend.clearLog()
        await outbox.replay()
        #expect(writes.isEmpty)
        #expect(outbox.held.map(\.id) == [id])
    }

    @Test func laterChangesOfAHeldItemWaitBehindItAndOtherItemsGoOn() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, first, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        #expect(outbox.held.map(\.id) == [first])
        // Online, but behind a held change of its item: kept, not sent.
        backend.clearLog()
        let later = try await expectKept(outbox) { () async throws(NetworkError) in
            _ = try await post.update(Post(id: "42", title: "Later"), optimistic: Post(id: "42", title: "Later"))
        }
        let other = store.resource(RemotePost.self, id: "43")
        try await other.read("43")
        #expect(
            try await other.update(Post(id: "43", title: "Sent"), optimistic: Post(id: "43", title: "Sent")).title
                == "Sent")
        await outbox.replay()
        #expect(writes.map(\.path) == ["/api/posts/43"])
        #expect(outbox.pending.map(\.id) == [first, later])
        #expect(outbox.pending.map(\.isHeld) == [true, false])
        #expect(post.value?.title == "Later")
        // Resolved by keeping A's edit: the first lands on B's version, then the later one on the first's.
        backend.clearLog()
        #expect(try await outbox.resolve(first, with: .keepMine))
        #expect(outbox.pending.isEmpty)
        #expect(writes.map(\.method) == [.patch, .patch])
        #expect(try serverPost("42")?.title == "Later")
        #expect(post.value?.title == "Later")
    }

    @Test func keepServerRollsTheChangeBackEverywhereAndSendsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, id, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        let twin = store.resource(RemotePost.self, id: "42")
        #expect(twin.value?.title == "Mine")
        backend.clearLog()
        #expect(try await outbox.resolve(id, with: .keepServer))
        #expect(backend.requestLog.isEmpty)
        #expect(outbox.pending.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(post.value == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(twin.value == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(try await outbox.resolve(id, with: .keepServer) == false)
    }

    @Test func keepMineSendsTheChangeAgainOnTheServersVersionWithANewKey() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, id, tag) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        let theirs = try #require(try await servedTag("42"))
        backend.clearLog()
        #expect(try await outbox.resolve(id, with: .keepMine))
        #expect(writes.map(\.method) == [.patch])
        #expect(writes.first?.headers["If-Match"] == theirs)
        #expect(writes.first?.headers["If-Match"] != tag)
        let key = try #require(writes.first?.headers["Idempotency-Key"])
        #expect(key != id)
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
        #expect(post.value == Post(id: "42", title: "Mine"))
        #expect(outbox.pending.isEmpty)
    }

    @Test func eachPolicyResolvesAsItSaysAndReportsIt() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let policies: [(ConflictPolicy<Post>, Post, String)] = [
            (.keepServer, Post(id: "42", title: "Hello", body: "Theirs"), "keepServer"),
            (.keepMine, Post(id: "42", title: "Mine"), "keepMine"),
            (.merge(mergeFields), Post(id: "42", title: "Mine", body: "Theirs"), "use"),
        ]
        for (policy, expected, name) in policies {
            try? FileManager.default.removeItem(at: directory)
            try backend.seed([Post(id: "42", title: "Hello")], into: "posts")
            let (store, post, id, _) = try await conflictingEdit(
                queueing: [.resources(RemotePost.self, conflicts: policy)])
            let outbox = try #require(store.outbox)
            let reports = ConflictCollector(outbox)
            backend.clearLog()
            await outbox.replay()
            try await reports.arrived.wait()
            #expect(try serverPost("42") == expected, "\(name)")
            #expect(post.value == expected, "\(name)")
            #expect(outbox.pending.isEmpty, "\(name)")
            #expect(reports.all.map(\.id) == [id])
            #expect(reports.all.first?.resolution?.description.hasPrefix(name) == true, "\(name)")
            #expect(reports.all.first?.theirs(as: Post.self)?.body == "Theirs")
            // The refused write, then the resolved one (none to keep the server's).
            #expect(writes.count == (name == "keepServer" ? 1 : 2), "\(name)")
        }
    }

    @Test func aHeldChangeStaysHeldAndShownAcrossARestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let id: String
        do {
            let (store, _, kept, _) = try await conflictingEdit()
            id = kept
            await store.outbox?.replay()
            #expect(store.outbox?.held.map(\.id) == [id])
            await store.persistence?.flush()
        }
        let store = try launch()
        let outbox = try #require(store.outbox)
        let held = try #require(outbox.held.first)
        #expect(held.id == id)
        #expect(held.mine(as: Post.self)?.title == "Mine")
        #expect(held.theirs(as: Post.self)?.body == "Theirs")
        #expect(held.base(as: Post.self)?.title == "Hello")
        #expect(store.resource(RemotePost.self, id: "42").value?.title == "Mine")
        backend.clearLog()
        await outbox.replay()
        #expect(writes.isEmpty)
        #expect(try await outbox.resolve(id, with: .use(Post(id: "42", title: "Mine", body: "Theirs"))))
        #expect(try serverPost("42") == Post(id: "42", title: "Mine", body: "Theirs"))
        #expect(store.resource(RemotePost.self, id: "42").value == Post(id: "42", title: "Mine", body: "Theirs"))
    }

    @Test func withoutAnETagTheReplayIsConditionalOnLastModified() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await conflictingEdit(
            transport: StrippingTransport(base: backend, dropsEntityTags: true))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        #expect(writes.first?.headers["If-Match"] == nil)
        #expect(writes.first?.headers["If-Unmodified-Since"] != nil)
        #expect(outbox.held.map(\.id) == [id])
        #expect(try serverPost("42")?.body == "Theirs")
    }

    @Test func aVersionCheckFindsTheConflictWhereTheServerIgnoresPreconditions() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let ignoring = StrippingTransport(base: backend, dropsPreconditions: true)
        let store = try launch(
            queueing: [.resources(RemoteStampedPost.self, detection: .versionCheck)], transport: ignoring)
        let post = store.resource(RemoteStampedPost.self, id: "42")
        let calm = store.resource(RemoteStampedPost.self, id: "43")
        try await post.read("42")
        try await calm.read("43")
        backend.isReachable = false
        _ = try await post.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
        _ = try await calm.update(Post(id: "43", title: "Calm"), optimistic: Post(id: "43", title: "Calm"))
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        // 42: read, versions differ, nothing written. 43: read, same version, written.
        #expect(
            backend.requestLog.map { "\($0.method) \($0.path)" } == [
                "GET /api/posts/42", "GET /api/posts/43", "PATCH /api/posts/43",
            ])
        #expect(outbox.held.map { $0.mine(as: Post.self)?.title } == ["Mine"])
        #expect(try serverPost("42")?.body == "Theirs")
        #expect(try serverPost("43")?.title == "Calm")
    }

    @Test func aDeletionInConflictIsHeldAndOneOfAnItemTheServerDeletedHasLanded() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let edited = store.resource(RemotePost.self, id: "42")
        let gone = store.resource(RemotePost.self, id: "43")
        try await edited.read("42")
        try await gone.read("43")
        backend.isReachable = false
        #expect(try await edited.delete(Post(id: "42", title: "Hello"), optimistic: true) == nil)
        #expect(try await gone.delete(Post(id: "43", title: "Bye"), optimistic: true) == nil)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        try await NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            .send(RemotePost.deleteEndpoint(for: Post(id: "43", title: "Bye")))
        let outbox = try #require(store.outbox)
        await outbox.replay()
        let held = try #require(outbox.held.first)
        #expect(outbox.held.count == 1)
        #expect(held.change.kind == .delete)
        #expect(held.mine(as: Post.self) == nil)
        #expect(held.theirs(as: Post.self)?.body == "Theirs")
        #expect(try serverPost("42") != nil)
        #expect(edited.value == nil)
        // Kept: deleted over B's edit, knowingly.
        #expect(try await outbox.resolve(held.id, with: .keepMine))
        #expect(try serverPost("42") == nil)
        #expect(outbox.pending.isEmpty)
    }

    // MARK: Online, and bases after a landing

    @Test func anOnlineChangeThatOptsInIsConditionalAndA412IsHeldNotAnOverwrite() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.resources(RemotePost.self, conditionalWhenOnline: true)])
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let tag = try #require(try await servedTag("42"))
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox)
        backend.clearLog()
        let mine = Post(id: "42", title: "Mine")
        // Returned as a kept change: shown, not failed, not sent over B's.
        #expect(try await post.update(mine, optimistic: mine) == mine)
        try await reports.arrived.wait()
        await outbox.replay()
        #expect(writes.first?.headers["If-Match"] == tag)
        #expect(try serverPost("42") == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(outbox.held.first?.mine(as: Post.self) == mine)
        #expect(outbox.held.first?.theirs(as: Post.self)?.body == "Theirs")
        #expect(post.value == mine)
        // Without a conflict, the conditional change is sent at once and lands.
        let other = store.resource(RemotePost.self, id: "43")
        try await other.read("43")
        backend.clearLog()
        #expect(
            try await other.update(Post(id: "43", title: "Fine"), optimistic: Post(id: "43", title: "Fine")).title
                == "Fine")
        #expect(writes.count == 1)
        #expect(writes.first?.headers["If-Match"] != nil)
        #expect(try serverPost("43")?.title == "Fine")
    }

    @Test func anOnlineChangeThatDoesNotOptInOverwritesAsTheDocsSay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        backend.clearLog()
        _ = try await post.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
        #expect(writes.first?.headers["If-Match"] == nil)
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
    }

    @Test func aChangeMadeOnAValueTheOutboxLandedIsConditionalOnThatAnswer() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let outbox = try #require(store.outbox)
        try await keepOffline(post, Post(id: "42", title: "First"), in: store)
        backend.isReachable = true
        await outbox.replay()
        let landed = try #require(try await servedTag("42"))
        #expect(outbox.pending.isEmpty)
        // Made on the landed answer, which reached the resource without its validators: the outbox knows them.
        let (_, second) = try await keepOffline(post, Post(id: "42", title: "Second"), in: store)
        #expect(outbox.pending.first?.base?.entityTag == landed)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "First", body: "Theirs"))
        await outbox.replay()
        #expect(outbox.held.map(\.id) == [second])
        #expect(try serverPost("42")?.body == "Theirs")
    }

    @Test func aChangeMadeAfterAnOnlineUpdateIsConditionalOnTheUpdatesAnswer() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        _ = try await post.update(Post(id: "42", title: "Online"), optimistic: Post(id: "42", title: "Online"))
        let answered = try #require(try await servedTag("42"))
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Offline"), in: store)
        #expect(store.outbox?.pending.first?.base?.entityTag == answered)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Online", body: "Theirs"))
        await store.outbox?.replay()
        #expect(store.outbox?.held.map(\.id) == [id])
    }

    @Test func aChangeBeingResolvedCannotBeCancelledOrResolvedAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = HeldStores(try FileEntryStorage(directory: directory.appendingPathComponent("outbox")))
        let store = try launch(outbox: storage)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        await outbox.replay()
        #expect(outbox.held.map(\.id) == [id])
        // The resolution's record waits on its way to the disk: the resolution is under way.
        let hold = DispatchSemaphore(value: 0)
        storage.holds.withLock { $0 = hold }
        let resolving = Task { try await outbox.resolve(id, with: .keepMine) }
        try await storage.storeStarted.wait()
        // Refused at once, while the resolution's write waits. (Taken, the cancel would wait for its own removal
        // behind that write: the suite's time limit would end the test.)
        #expect(try await outbox.cancel(id) == false)
        #expect(try await outbox.resolve(id, with: .keepServer) == false)
        hold.signal()
        #expect(try await resolving.value)
        #expect(outbox.pending.isEmpty)
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
        #expect(post.value == Post(id: "42", title: "Mine"))
    }

    // MARK: Lists, and the version check online

    @Test func aListChangeOfATypeThatReadsItsItemsIsCheckedAndHeld() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(
            queueing: [.list(RemoteStampedFeed.self, reading: RemoteStampedPost.self, conflicts: .merge(mergeFields))],
            transport: StrippingTransport(base: backend, dropsPreconditions: true))
        let feed = store.list(RemoteStampedFeed.self, request: "all")
        _ = try await feed.loadFirstPage()
        backend.isReachable = false
        let mine = Post(id: "42", title: "Mine")
        #expect(try await feed.update(mine, optimistic: mine) == mine)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox)
        backend.clearLog()
        await outbox.replay()
        try await reports.arrived.wait()
        // Read, found moved, merged, read again, written: both edits on the server and in the list.
        #expect(backend.requestLog.map(\.method) == [.get, .get, .patch])
        #expect(reports.all.first?.resolution?.description.hasPrefix("use") == true)
        #expect(try serverPost("42") == Post(id: "42", title: "Mine", body: "Theirs"))
        #expect(feed.items.first { $0.id == "42" } == Post(id: "42", title: "Mine", body: "Theirs"))
        #expect(outbox.pending.isEmpty)
    }

    @Test func anOnlineListChangeThatOptsInIsCheckedFirstAndAConflictIsHeld() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(
            queueing: [.list(RemoteStampedFeed.self, reading: RemoteStampedPost.self, conditionalWhenOnline: true)],
            transport: StrippingTransport(base: backend, dropsPreconditions: true))
        let feed = store.list(RemoteStampedFeed.self, request: "all")
        _ = try await feed.loadFirstPage()
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        let mine = Post(id: "42", title: "Mine")
        #expect(try await feed.update(mine, optimistic: mine) == mine)
        await outbox.replay()
        // The check before the write, the replay's check: nothing written over B's edit.
        #expect(backend.requestLog.map(\.method) == [.get, .get])
        #expect(outbox.held.first?.theirs(as: Post.self)?.body == "Theirs")
        #expect(feed.items.first { $0.id == "42" } == mine)
        #expect(try serverPost("42")?.body == "Theirs")
        // Without a conflict: one check, one write.
        backend.clearLog()
        let calm = Post(id: "43", title: "Calm")
        #expect(try await feed.update(calm, optimistic: calm) == calm)
        #expect(backend.requestLog.map(\.method) == [.get, .patch])
        #expect(try serverPost("43")?.title == "Calm")
    }

    @Test func anOnlineResourceChangeIsVersionCheckedWhereTheServerIgnoresPreconditions() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(
            queueing: [.resources(RemoteStampedPost.self, detection: .versionCheck, conditionalWhenOnline: true)],
            transport: StrippingTransport(base: backend, dropsPreconditions: true))
        let post = store.resource(RemoteStampedPost.self, id: "42")
        try await post.read("42")
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        backend.clearLog()
        let mine = Post(id: "42", title: "Mine")
        #expect(try await post.update(mine, optimistic: mine) == mine)
        await store.outbox?.replay()
        #expect(backend.requestLog.map(\.method) == [.get, .get])
        #expect(store.outbox?.held.first?.mine(as: Post.self) == mine)
        #expect(try serverPost("42")?.body == "Theirs")
    }

    // MARK: Edges

    @Test func aWeakETagIsNeverSentAsIfMatchLastModifiedIsSentInstead() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await conflictingEdit(transport: WeakTags(base: backend))
        let outbox = try #require(store.outbox)
        #expect(outbox.pending.first?.base?.entityTag?.hasPrefix("W/") == true)
        backend.clearLog()
        await outbox.replay()
        #expect(writes.first?.headers["If-Match"] == nil)
        #expect(writes.first?.headers["If-Unmodified-Since"] != nil)
        #expect(outbox.held.map(\.id) == [id])
    }

    @Test func anUpdateOfAnItemDeletedMeanwhileIsAConflictWithTheDeletion() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // A server that ignores preconditions answers the update of a deleted item 404.
        let store = try launch(
            queueing: [.resources(RemotePost.self, conflicts: .keepMine)],
            transport: StrippingTransport(base: backend, dropsPreconditions: true))
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        backend.isReachable = true
        try await NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            .send(RemotePost.deleteEndpoint(for: Post(id: "42", title: "")))
        let outbox = try #require(store.outbox)
        await outbox.replay()
        // Keep mine cannot update a deleted item: held, and said why, not refused and lost.
        let held = try #require(outbox.held.first)
        #expect(held.id == id)
        #expect(held.isDeletedOnServer)
        #expect(held.theirs(as: Post.self) == nil)
        #expect(held.mine(as: Post.self)?.title == "Mine")
        #expect(held.error?.description.contains("deleted") == true)
        do {
            try await outbox.resolve(id, with: .keepMine)
            Issue.record("keepMine was taken for a deleted item")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(outbox.held.map(\.id) == [id])
        #expect(try await outbox.resolve(id, with: .keepServer))
        #expect(outbox.pending.isEmpty)
        #expect(post.value == nil)
    }

    @Test func theVersionCheckOfAnItemThatIsGoneHoldsAnUpdateAndLandsADeletion() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(
            queueing: [.resources(RemoteStampedPost.self, detection: .versionCheck)],
            transport: StrippingTransport(base: backend, dropsPreconditions: true))
        let edited = store.resource(RemoteStampedPost.self, id: "42")
        let deleted = store.resource(RemoteStampedPost.self, id: "43")
        try await edited.read("42")
        try await deleted.read("43")
        backend.isReachable = false
        _ = try await edited.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
        _ = try await deleted.delete(Post(id: "43", title: "Bye"), optimistic: true)
        backend.isReachable = true
        let other = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        try await other.send(RemotePost.deleteEndpoint(for: Post(id: "42", title: "")))
        try await other.send(RemotePost.deleteEndpoint(for: Post(id: "43", title: "")))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        #expect(backend.requestLog.map { "\($0.method) \($0.path)" } == ["GET /api/posts/42", "GET /api/posts/43"])
        #expect(outbox.held.map { $0.change.itemID } == ["42"])
        #expect(outbox.held.first?.isDeletedOnServer == true)
        #expect(outbox.pending.count == 1)
    }

    @Test func anAppCanResolveFromItsConflictsStreamWhileTheReplayRuns() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, id, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        let stream = outbox.conflicts()
        let resolver = Task { () async throws -> Bool in
            for await conflict in stream { return try await outbox.resolve(conflict.id, with: .keepMine) }
            return false
        }
        await outbox.replay()
        #expect(try await resolver.value)
        #expect(outbox.pending.isEmpty, "\(outbox.pending)")
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
        #expect(post.value == Post(id: "42", title: "Mine"))
        #expect(outbox.held.allSatisfy { $0.id != id })
    }

    @Test func aChangeResolvedWhileTheReplayThatFoundItRunsIsSentByThatReplay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = GatedPath(base: backend, path: "/api/posts/43")
        let (store, _, id, _) = try await conflictingEdit(transport: gate)
        let other = store.resource(RemotePost.self, id: "43")
        try await other.read("43")
        try await keepOffline(other, Post(id: "43", title: "Next"), in: store)
        backend.isReachable = true
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox)
        // The replay holds 42's change, then waits at 43's write.
        gate.armed.withLock { $0 = true }
        let replaying = Task { await outbox.replay() }
        try await reports.arrived.wait()
        try await gate.entered.wait()
        // The app resolves 42 now: its call joins the replay that already tried 42.
        let resolving = Task { try await outbox.resolve(id, with: .keepMine) }
        try await waitUntil("the resolution waits for the replay") { outbox.replayCallerCount == 2 }
        gate.release.open()
        #expect(try await resolving.value)
        await replaying.value
        #expect(outbox.pending.isEmpty, "\(outbox.pending)")
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
        #expect(try serverPost("43")?.title == "Next")
    }

    @Test func a412WhoseBodyIsAnotherItemIsNotTakenForTheServersValue() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await conflictingEdit(transport: WrongItemOn412(base: backend))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        // Not the item: read, and the server's own value reported.
        #expect(backend.requestLog.map(\.method) == [.patch, .get])
        #expect(outbox.held.first?.id == id)
        #expect(outbox.held.first?.theirs(as: Post.self) == Post(id: "42", title: "Hello", body: "Theirs"))
    }

    @Test func aConflictWhoseServerValueCannotBeReadIsHeldAndSaysWhy() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let refusing = RefusingTransport.Switch()
        let (store, post, id, _) = try await conflictingEdit(
            transport: RefusingTransport(base: backend, refuses: refusing, refusesReads: true))
        let outbox = try #require(store.outbox)
        refusing.isOn.withLock { $0 = true }
        await outbox.replay()
        let held = try #require(outbox.held.first)
        #expect(held.id == id)
        #expect(held.theirs(as: Post.self) == nil)
        #expect(!held.isDeletedOnServer)
        #expect(held.error?.statusCode == 403)
        #expect(post.value?.title == "Mine")
        // Keeping the server's: the change goes, and the item is read again.
        refusing.isOn.withLock { $0 = false }
        #expect(try await outbox.resolve(id, with: .keepServer))
        #expect(outbox.pending.isEmpty)
        #expect(try await post.read("42") == Post(id: "42", title: "Hello", body: "Theirs"))
    }

    @Test func aLandedChangeWhoseAnswerDoesNotDecodeIsTheBaseOfTheNextOneAfterARead() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(transport: EmptyWriteAnswers(base: backend))
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await keepOffline(post, Post(id: "42", title: "First"), in: store)
        try await keepOffline(post, Post(id: "42", title: "Second"), in: store)
        backend.isReachable = true
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        // No conflict with its own write: the second change is made on the item as the server had it after the
        // first.
        #expect(outbox.held.isEmpty)
        #expect(outbox.pending.isEmpty)
        #expect(backend.requestLog.map(\.method).filter { $0 != .get }.count == 2)
        #expect(try serverPost("42")?.title == "Second")
    }

    @Test func keepServerLeavesTheLaterChangesOfTheItemWhichFindConflictsOfTheirOwn() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, first, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        let later = try await expectKept(outbox) { () async throws(NetworkError) in
            _ = try await post.update(Post(id: "42", title: "Later"), optimistic: Post(id: "42", title: "Later"))
        }
        #expect(try await outbox.resolve(first, with: .keepServer))
        #expect(outbox.pending.map(\.id) == [later])
        // Made on the dropped change, the later one is refused its precondition in turn: held, reported.
        await outbox.replay()
        #expect(outbox.held.map(\.id) == [later])
        #expect(try serverPost("42")?.body == "Theirs")
        #expect(post.value?.title == "Later")
    }

    @Test func aMergeOfATypeThatMakesNoRequestOfAValueIsHeldBeforeTheClosureRuns() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let runs = Locked(0)
        let store = try launch(queueing: [
            .resources(
                RemoteTitlePost.self,
                conflicts: .merge { _, mine, _ in
                    runs.withLock { $0 += 1 }
                    return mine
                })
        ])
        let post = store.resource(RemoteTitlePost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        #expect(try await post.update(["title": "Mine"], optimistic: Post(id: "42", title: "Mine")).title == "Mine")
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        await store.outbox?.replay()
        #expect(store.outbox?.held.first?.error?.description.contains("updateRequest") == true)
        #expect(runs.withLock { $0 } == 0)
    }

    @Test func aDeletionAnswered410HasLanded() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "43")
        try await post.read("43")
        backend.isReachable = false
        _ = try await post.delete(Post(id: "43", title: "Bye"), optimistic: true)
        backend.isReachable = true
        backend.failNext(1, status: 410)
        await store.outbox?.replay()
        // Landed, not refused: nothing reported, nothing held, nothing left.
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(store.outbox?.held.isEmpty == true)
        #expect(store.outbox?.reportCounts.failures == 0)
        #expect(post.value == nil)
    }

    // MARK: Bad input

    @Test func aMergeThatThrowsOrAnswersAnotherItemHoldsTheChangeAndSaysWhy() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        struct Refused: Error {}
        let merges: [(@Sendable (Post?, Post, Post) throws -> Post, String)] = [
            ({ _, _, _ in throw Refused() }, "threw"),
            ({ _, mine, _ in Post(id: "43", title: mine.title) }, "item 43"),
        ]
        for (merge, reason) in merges {
            try? FileManager.default.removeItem(at: directory)
            try backend.seed([Post(id: "42", title: "Hello")], into: "posts")
            let (store, post, id, _) = try await conflictingEdit(
                queueing: [.resources(RemotePost.self, conflicts: .merge(merge))])
            let outbox = try #require(store.outbox)
            backend.clearLog()
            await outbox.replay()
            let held = try #require(outbox.held.first)
            #expect(held.id == id)
            #expect(held.error?.description.contains(reason) == true, "\(String(describing: held.error))")
            #expect(writes.count == 1)
            #expect(try serverPost("42")?.body == "Theirs")
            #expect(try serverPost("43")?.title == "Bye")
            #expect(post.value?.title == "Mine")
        }
    }

    @Test func aResolutionWithAValueOfAnotherItemOrTypeIsRefusedAndTheChangeStaysHeld() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        backend.clearLog()
        for resolution in [ConflictResolution.use(Post(id: "43", title: "Wrong")), .use("a string")] {
            do {
                try await outbox.resolve(id, with: resolution)
                Issue.record("\(resolution) was taken")
            } catch {
                #expect(error.code == .invalidRequest)
            }
        }
        #expect(try await outbox.resolve("no such change", with: .keepMine) == false)
        #expect(backend.requestLog.isEmpty)
        #expect(outbox.held.map(\.id) == [id])
    }

    @Test func a412WithoutABodyIsAConflictWithTheItemReadAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        backend.failNext(1, status: 412)
        backend.clearLog()
        await outbox.replay()
        #expect(backend.requestLog.map(\.method) == [.patch, .get])
        #expect(outbox.held.first?.id == id)
        #expect(outbox.held.first?.theirs(as: Post.self)?.body == "Theirs")
    }

    @Test func aServerThatAnswers412ForeverGetsTheChangeTwiceAndThenItIsHeld() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let refusing = RefusingTransport.Switch()
        let (store, post, id, _) = try await conflictingEdit(
            queueing: [.resources(RemotePost.self, conflicts: .keepMine)],
            transport: RefusingTransport(base: backend, refuses: refusing))
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox, expecting: 2)
        refusing.isOn.withLock { $0 = true }
        backend.clearLog()
        await outbox.replay()
        try await reports.arrived.wait()
        // The first attempt, its read, the resolved attempt, its read: then held, not sent a third time.
        #expect(backend.requestLog.map(\.method) == [.get, .get])
        #expect(reports.all.map { $0.resolution?.description } == ["keepMine", nil])
        #expect(outbox.held.first?.id == id)
        #expect(outbox.held.first?.error != nil)
        #expect(post.value?.title == "Mine")
        backend.clearLog()
        await outbox.replay()
        #expect(backend.requestLog.isEmpty)
    }
}

/// Collects a conflicts stream's reports, made before the replay that finds them.
final class ConflictCollector: Sendable {
    final class Reports: Sendable {
        let list = Locked<[OutboxConflict]>([])
    }

    let reports = Reports()
    let arrived = AsyncLatch()
    let task: Task<Void, Never>

    init(_ outbox: Outbox?, expecting count: Int = 1) {
        let stream = outbox?.conflicts()
        let (reports, arrived) = (reports, arrived)
        task = Task {
            guard let stream else { return }
            for await conflict in stream {
                if reports.list.withLock({
                    $0.append(conflict); return $0.count
                }) == count {
                    arrived.open()
                }
            }
        }
    }

    var all: [OutboxConflict] { reports.list.withLock { $0 } }
    deinit { task.cancel() }
}
