import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

/// An outbox storage whose removals fail while `failsRemovals` is set: a change that landed but could not be
/// taken off the disk, as after a crash between the two.
final class FlakyRemovals: EntryStorage {
    let base: FileEntryStorage
    let failsRemovals = Locked(false)
    /// When set, the next removal (one only) waits for `holds` to be signalled, after opening `removalStarted`.
    let holds = Locked<DispatchSemaphore?>(nil)
    let removalStarted = AsyncLatch()

    init(_ base: FileEntryStorage) { self.base = base }

    func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try base.entry(for: key) }
    func store(_ entries: [PersistedEntry]) throws(NetworkError) { try base.store(entries) }
    func removeEntries(for keys: [String]) throws(NetworkError) {
        if let hold = holds.withLock({ hold in
            defer { hold = nil }; return hold
        }) {
            removalStarted.open()
            hold.wait()
        }
        if failsRemovals.withLock({ $0 }) { throw .file("removals fail in this test") }
        try base.removeEntries(for: keys)
    }
    func removeAll() throws(NetworkError) { try base.removeAll() }
    func allKeys() throws(NetworkError) -> [String] { try base.allKeys() }
}

@Suite(.timeLimit(.minutes(1)), .offThePool) struct OutboxTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
    let backend = InMemoryBackend(basePath: "/api")

    init() throws {
        backend.addCollection("posts")
        try backend.seed(
            [
                Post(id: "42", title: "Hello"), Post(id: "43", title: "Bye"), Post(id: "44", title: "Gone soon"),
            ], into: "posts")
    }

    /// A store as one run of the app makes it: a new session, the same directories, `RemotePost` kept offline.
    func launch(
        outbox: (any EntryStorage)? = nil, queueing: [OfflineQueueing] = [.resources(RemotePost.self)],
        writeDelay: Duration = .milliseconds(100),
        transport: (any HTTPTransport)? = nil
    ) throws -> ResourceStore {
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try outbox ?? FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: queueing, writeDelay: writeDelay)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport ?? backend, timeLimit: nil)
        let store = ResourceStore(session: session, persistence: persistence)
        return store
    }

    func serverPost(_ id: String) throws -> Post? {
        try backend.records(Post.self, in: "posts").first { $0.id == id }
    }

    var writes: [InMemoryBackend.RecordedRequest] { backend.requestLog.filter { $0.method != .get } }

    /// Takes the backend offline and updates `post` to `edited`, optimistically; the change must be kept.
    /// - Returns: The edited value, and the kept change's id.
    @discardableResult
    func keepOffline(
        _ post: Resource<RemotePost>, _ edited: Post, in store: ResourceStore
    ) async throws -> (post: Post, id: String) {
        backend.isReachable = false
        let id = try await expectKept(store.outbox) { () async throws(NetworkError) in
            // Kept, not failed: the call returns what every holder shows.
            #expect(try await post.update(edited, optimistic: edited) == edited)
        }
        return (edited, id)
    }

    /// Runs `body`, a change that the outbox must keep and that shows something (an optimistic value, a
    /// deletion): it returns, and is not an error. Returns the kept change's id.
    func expectKept(_ outbox: Outbox?, _ body: () async throws(NetworkError) -> Void) async throws -> String {
        let outbox = try #require(outbox)
        let before = Set(outbox.pending.map(\.id))
        try await body()
        let added = outbox.pending.filter { !before.contains($0.id) }
        #expect(added.count == 1, "the change was sent, not kept")
        return try #require(added.first).id
    }

    /// Runs `body`, a change that the outbox must keep and that shows nothing (no optimistic value): it
    /// throws `.queued`, the only way to tell that it was kept. Returns the kept change's id.
    func expectQueued(_ body: () async throws(NetworkError) -> Void) async throws -> String {
        do {
            try await body()
        } catch {
            #expect(error.code == .queued, "\(error)")
            return try #require(error.queuedChange)
        }
        Issue.record("the change was sent, not kept")
        return ""
    }

    /// A kept change is a state, not a failure: the resource goes from its value to the kept one, through
    /// `loading` while the attempt runs, and never shows `failure`; a delete returns `nil`.
    @Test func aKeptChangeReturnsWhatItShowsAndItsStatesHoldNoFailure() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        let gone = store.resource(RemotePost.self, id: "43")
        try await post.read("42")
        try await gone.read("43")
        let recorder = StateRecorder(post.states)
        try await recorder.waitForCount(1)
        backend.isReachable = false
        let edited = Post(id: "42", title: "Kept")
        #expect(try await post.update(edited, optimistic: edited) == edited)
        #expect(try await gone.delete(Post(id: "43", title: "Bye"), optimistic: true) == nil)
        #expect(gone.state == .idle)
        #expect(store.outbox?.pending.map(\.kind) == [.update, .delete])
        // `loading(previous: edited)` twice: the outbox's layer, shown while the attempt still runs, takes the
        // top from the resource's own optimistic layer, and the state is published again, the same.
        let states = try await recorder.waitForCount(4)
        #expect(
            states == [
                .available(Post(id: "42", title: "Hello")), .loading(previous: edited), .loading(previous: edited),
                .available(edited),
            ])
        #expect(!states.contains { if case .failure = $0 { true } else { false } })
    }

    /// Without an optimistic value, a kept update shows nothing and has no value to return: it throws
    /// `.queued`, naming the kept change, and the resource keeps showing the server's value.
    @Test func aKeptUpdateWithoutAnOptimisticValueThrowsQueuedAndShowsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        let id = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(Post(id: "42", title: "Unseen"))
        }
        #expect(store.outbox?.pending.map(\.id) == [id])
        #expect(post.state == .available(Post(id: "42", title: "Hello")))
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(try serverPost("42")?.title == "Unseen")
        #expect(post.state == .available(Post(id: "42", title: "Unseen")))
    }

    @Test func anUpdateMadeOfflineIsKeptShownInEveryHolderAndReplayedOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        _ = try await feed.loadFirstPage()
        let recorder = StateRecorder(post.states)
        try await recorder.waitForCount(1)
        backend.isReachable = false

        let edited = Post(id: "42", title: "Edited offline")
        let id = try await expectKept(store.outbox) { () async throws(NetworkError) in
            // Not an error: the call returns the value every holder shows.
            #expect(try await post.update(edited, optimistic: edited) == edited)
        }
        // Shown at once and after the call, in the resource, the list and an object made afterwards.
        #expect(post.state == .available(edited))
        #expect(feed.items.first { $0.id == "42" } == edited)
        #expect(store.resource(RemotePostPreview.self, id: "42").state == .available(edited))
        let pending = try #require(store.outbox?.pending.first)
        #expect(store.outbox?.pending.count == 1)
        #expect(pending.id == id)
        #expect(pending.kind == .update)
        #expect(pending.itemID == "42")
        #expect(pending.method == .patch)
        #expect(writes.isEmpty)

        backend.isReachable = true
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try serverPost("42")?.title == "Edited offline")
        #expect(writes.count == 1)
        #expect(writes.first?.headers["Idempotency-Key"] == id)
        #expect(post.state == .available(edited))
        #expect(feed.items.first { $0.id == "42" } == edited)
        // Exactly: the read; loading under the call's optimistic value, then under the kept change's (the
        // layer changed, not the value); the kept change once the call ended; the server's answer once it
        // landed (the same value, now the server's).
        try await recorder.expect([
            .available(Post(id: "42", title: "Hello")), .loading(previous: edited), .loading(previous: edited),
            .available(edited), .available(edited),
        ])
        recorder.stop()
    }

    /// An outbox's storage keeps every change whatever bound it was given: a `FileEntryStorage` of one byte,
    /// plain or sealed, which would keep one entry as a cache, keeps all three changes across a restart.
    @Test(arguments: [false, true])
    func anOutboxStorageNeverEvictsAChangeWhateverItsBound(sealed: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let outboxDirectory = directory.appendingPathComponent("outbox")
        func tinyOutbox() throws -> any EntryStorage {
            let files = try FileEntryStorage(directory: outboxDirectory, maximumBytes: 1)
            return sealed ? SealedEntryStorage(files, codec: EntryCodec(seal: { $0 }, open: { $0 })) : files
        }
        var ids: [String] = []
        do {
            let store = try launch(outbox: try tinyOutbox())
            for id in ["42", "43", "44"] { try await store.resource(RemotePost.self, id: id).read(id) }
            for id in ["42", "43", "44"] {
                let post = store.resource(RemotePost.self, id: id)
                ids.append(try await keepOffline(post, Post(id: id, title: "Edited \(id)"), in: store).id)
            }
            await store.persistence?.flush()
            #expect(store.outbox?.pending.map(\.id) == ids)
        }
        #expect(try FileEntryStorage(directory: outboxDirectory).allKeys().count == 3)
        let store = try launch(outbox: try tinyOutbox())
        #expect(store.outbox?.pending.map(\.id) == ids)
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try ["42", "43", "44"].map { try serverPost($0)?.title } == ["Edited 42", "Edited 43", "Edited 44"])
    }

    @Test func keptChangesSurviveARestartShowAtOnceAndReplayInOrder() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var ids: [String] = []
        do {
            let store = try launch()
            for id in ["42", "43", "44"] { try await store.resource(RemotePost.self, id: id).read(id) }
            backend.isReachable = false
            let first = store.resource(RemotePost.self, id: "42")
            let other = store.resource(RemotePost.self, id: "43")
            let doomed = store.resource(RemotePost.self, id: "44")
            let one = Post(id: "42", title: "One")
            let two = Post(id: "42", title: "Two")
            let three = Post(id: "43", title: "Three")
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
                    _ = try await first.update(one, optimistic: one)
                })
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
                    _ = try await other.update(three, optimistic: three)
                })
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
                    _ = try await first.update(two, optimistic: two)
                })
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
                    _ = try await doomed.delete(Post(id: "44", title: "Gone soon"), optimistic: true)
                })
            #expect(doomed.state == .idle)
            await store.persistence?.flush()
        }
        // The next launch: the server is still unreachable, and the changes show before any request.
        let store = try launch()
        #expect(store.outbox?.pending.map(\.id) == ids)
        #expect(store.outbox?.pending.map(\.kind) == [.update, .update, .update, .delete])
        let first = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        #expect(first.state == .available(Post(id: "42", title: "Two")))
        #expect(store.resource(RemotePost.self, id: "43").state == .available(Post(id: "43", title: "Three")))
        #expect(store.resource(RemotePost.self, id: "44").state == .idle)
        await store.outbox?.replay()
        #expect(store.outbox?.pending.count == 4)
        #expect(writes.isEmpty)
        backend.isReachable = true
        backend.clearLog()
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(writes.map(\.method) == [.patch, .patch, .patch, .delete])
        #expect(writes.map(\.path) == ["/api/posts/42", "/api/posts/43", "/api/posts/42", "/api/posts/44"])
        #expect(writes.map { $0.headers["Idempotency-Key"] } == ids)
        #expect(try serverPost("42")?.title == "Two")
        #expect(try serverPost("43")?.title == "Three")
        #expect(try serverPost("44") == nil)
        let items = try await feed.loadFirstPage()
        #expect(items.map(\.id) == ["42", "43"])
        #expect(first.state == .available(Post(id: "42", title: "Two")))
    }

    @Test func aListMadeWhileChangesAreKeptShowsThemOverItsPages() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "43")
        try await post.read("43")
        let edited = try await keepOffline(post, Post(id: "43", title: "Kept"), in: store).post
        backend.isReachable = true
        // Made after the change was kept, loaded from the server (which has the old title): shows the change.
        let feed = store.list(RemoteFeed.self, request: "later")
        let items = try await feed.loadFirstPage()
        #expect(try serverPost("43")?.title == "Bye")
        #expect(items.first { $0.id == "43" } == edited)
        #expect(feed.items.first { $0.id == "43" } == edited)
    }

    @Test func aChangeRefusedOnReplayIsRolledBackWithItsDependentsAndOthersStillLand() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let outbox = try #require(store.outbox)
        let failures = outbox.failures()
        let post = store.resource(RemotePost.self, id: "42")
        let other = store.resource(RemotePost.self, id: "43")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        try await other.read("43")
        _ = try await feed.loadFirstPage()
        backend.isReachable = false
        let bad = Post(id: "42", title: "Refused")
        let onTop = Post(id: "42", title: "On top of it")
        let fine = Post(id: "43", title: "Lands")
        let refused = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await post.update(bad, optimistic: bad)
        }
        let dependent = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await post.update(onTop, optimistic: onTop)
        }
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await other.update(fine, optimistic: fine)
        }
        #expect(feed.items.first { $0.id == "42" } == onTop)

        backend.isReachable = true
        backend.failNext(1, status: 400)
        await outbox.replay()
        #expect(outbox.pending.isEmpty)
        // Rolled back everywhere: the server's value again.
        #expect(post.state == .available(Post(id: "42", title: "Hello")))
        #expect(feed.items.first { $0.id == "42" } == Post(id: "42", title: "Hello"))
        #expect(try serverPost("42")?.title == "Hello")
        // The independent change landed.
        #expect(try serverPost("43")?.title == "Lands")
        #expect(other.state == .available(fine))
        // Reported: the refused change with the server's error, and the one made on top of it, after it.
        var reported: [OutboxFailure] = []
        for await failure in failures {
            reported.append(failure)
            if reported.count == 2 { break }
        }
        #expect(reported.map(\.change.id) == [refused, dependent])
        #expect(reported.map(\.error.statusCode) == [400, 400])
        #expect(reported.map(\.after) == [nil, refused])
        // Only two requests: the refused one and the independent one (the dependent was never sent).
        #expect(writes.map(\.path) == ["/api/posts/42", "/api/posts/43"])
    }

    @Test func anUnreachableServerOrA503OnReplayKeepsEveryChangeForTheNextReplay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let edited = try await keepOffline(post, Post(id: "42", title: "Edited"), in: store).post
        await store.outbox?.replay()
        #expect(store.outbox?.pending.count == 1)
        backend.isReachable = true
        backend.failNext(1, status: 503)
        await store.outbox?.replay()
        #expect(store.outbox?.pending.count == 1)
        #expect(post.state == .available(edited))
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try serverPost("42")?.title == "Edited")
        #expect(writes.count == 2)
        #expect(Set(writes.map { $0.headers["Idempotency-Key"] }).count == 1)
    }
}
