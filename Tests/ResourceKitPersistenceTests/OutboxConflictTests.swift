import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
}
