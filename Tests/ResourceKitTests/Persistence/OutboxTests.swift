import Foundation
import ResourceKit
import ResourceKitTesting
import Synchronization
import Testing

/// An outbox storage whose removals fail while `failsRemovals` is set: a change that landed but could not be
/// taken off the disk, as after a crash between the two.
final class FlakyRemovals: EntryStorage {
    let base: FileEntryStorage
    let failsRemovals = Mutex(false)

    init(_ base: FileEntryStorage) { self.base = base }

    func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try base.entry(for: key) }
    func store(_ entries: [PersistedEntry]) throws(NetworkError) { try base.store(entries) }
    func removeEntries(for keys: [String]) throws(NetworkError) {
        if failsRemovals.withLock({ $0 }) { throw .file("removals fail in this test") }
        try base.removeEntries(for: keys)
    }
    func removeAll() throws(NetworkError) { try base.removeAll() }
    func allKeys() throws(NetworkError) -> [String] { try base.allKeys() }
}

@Suite(.timeLimit(.minutes(1))) struct OutboxTests {
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
        outbox: (any EntryStorage)? = nil, registers: Bool = true, writeDelay: Duration = .milliseconds(100)
    ) throws -> ResourceStore {
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try outbox
                ?? FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max),
            writeDelay: writeDelay)
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let store = ResourceStore(session: session, persistence: persistence)
        if registers { store.queueWhenOffline(RemotePost.self) }
        return store
    }

    func serverPost(_ id: String) throws -> Post? {
        try backend.records(Post.self, in: "posts").first { $0.id == id }
    }

    var writes: [InMemoryBackend.RecordedRequest] { backend.requestLog.filter { $0.method != .get } }

    /// Takes the backend offline and updates `post` to `edited`, optimistically; the change must be kept.
    /// - Returns: The edited value, and the kept change's id.
    @discardableResult
    func keepOffline(_ post: Resource<RemotePost>, _ edited: Post) async throws -> (post: Post, id: String) {
        backend.isReachable = false
        let id = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(edited, optimistic: edited)
        }
        return (edited, id)
    }

    /// Runs `body`, which must throw `.queued`; returns the kept change's id.
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
        let id = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(edited, optimistic: edited)
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
                try await expectQueued { () async throws(NetworkError) in
                    _ = try await first.update(one, optimistic: one)
                })
            ids.append(
                try await expectQueued { () async throws(NetworkError) in
                    _ = try await other.update(three, optimistic: three)
                })
            ids.append(
                try await expectQueued { () async throws(NetworkError) in
                    _ = try await first.update(two, optimistic: two)
                })
            ids.append(
                try await expectQueued { () async throws(NetworkError) in
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
        let edited = try await keepOffline(post, Post(id: "43", title: "Kept")).post
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
        let refused = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(bad, optimistic: bad)
        }
        let dependent = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(onTop, optimistic: onTop)
        }
        _ = try await expectQueued { () async throws(NetworkError) in _ = try await other.update(fine, optimistic: fine)
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
        let edited = try await keepOffline(post, Post(id: "42", title: "Edited")).post
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

    @Test func aChangeOfAnItemWithAKeptChangeWaitsBehindItEvenOnline() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        let first = Post(id: "42", title: "First")
        _ = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(first, optimistic: first)
        }
        backend.isReachable = true
        let second = Post(id: "42", title: "Second")
        _ = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(second, optimistic: second)
        }
        #expect(writes.isEmpty)
        #expect(post.state == .available(second))
        // Another item is not held back.
        let other = store.resource(RemotePost.self, id: "43")
        try await other.update(Post(id: "43", title: "Direct"))
        #expect(writes.count == 1)
        await store.outbox?.replay()
        #expect(writes.map(\.path) == ["/api/posts/43", "/api/posts/42", "/api/posts/42"])
        #expect(try serverPost("42")?.title == "Second")
    }

    @Test func cancellingAKeptChangeRollsItBackEverywhereAndItIsNeverSent() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let outbox = try #require(store.outbox)
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        _ = try await feed.loadFirstPage()
        backend.isReachable = false
        let changes = outbox.changes()
        var lists = changes.makeAsyncIterator()
        #expect(await lists.next()?.count == 0)
        let edited = Post(id: "42", title: "Never sent")
        let id = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(edited, optimistic: edited)
        }
        #expect(await lists.next()?.map(\.id) == [id])
        #expect(try await outbox.cancel(id))
        #expect(await lists.next()?.isEmpty == true)
        #expect(try await !outbox.cancel(id))
        #expect(try await !outbox.cancel("no such change"))
        #expect(post.state == .available(Post(id: "42", title: "Hello")))
        #expect(feed.items.first { $0.id == "42" } == Post(id: "42", title: "Hello"))
        backend.isReachable = true
        await outbox.replay()
        #expect(writes.isEmpty)
        // Gone from the disk too.
        #expect(try launch().outbox?.pending.isEmpty == true)
    }

    @Test func withoutQueueWhenOfflineAChangeFailsAndRollsBackAsBefore() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(registers: false)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        let edited = Post(id: "42", title: "Lost")
        await #expect(
            throws: NetworkError.transport(
                code: .notConnectedToInternet, message: "the in-memory backend is unreachable")
        ) {
            try await post.update(edited, optimistic: edited)
        }
        #expect(post.state.value == Post(id: "42", title: "Hello"))
        #expect(store.outbox?.pending.isEmpty == true)
        // A refusal while online is not kept either: only an unreachable server is.
        backend.isReachable = true
        store.queueWhenOffline(RemotePost.self)
        backend.failNext(1, status: 422)
        await #expect(throws: NetworkError.self) { try await post.update(edited, optimistic: edited) }
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.state.value == Post(id: "42", title: "Hello"))
    }

    @Test func aChangeThatLandedButStayedOnDiskIsSentAgainWithItsKeyAndAppliedOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FlakyRemovals(
            try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
        do {
            let store = try launch(outbox: storage)
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Once")
            _ = try await expectQueued { () async throws(NetworkError) in
                _ = try await post.update(edited, optimistic: edited)
            }
            backend.isReachable = true
            storage.failsRemovals.withLock { $0 = true }
            await store.outbox?.replay()
            #expect(store.outbox?.lastError?.code == .file)
            #expect(try serverPost("42")?.title == "Once")
        }
        storage.failsRemovals.withLock { $0 = false }
        // The next launch finds it on disk and sends it again, with the same key: the server applies it once.
        let store = try launch(outbox: storage)
        #expect(store.outbox?.pending.count == 1)
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.state.value?.title == "Once")
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(writes.count == 2)
        #expect(Set(writes.map { $0.headers["Idempotency-Key"] }).count == 1)
        #expect(backend.idempotentRepeats == 1)
        #expect(post.state.value?.title == "Once")
        #expect(post.isRestored == false)
    }

    @Test func changesThroughAListAreKeptWhenItsTypeIsGiven() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var ids: [String] = []
        do {
            let store = try launch(registers: false)
            store.queueWhenOffline(list: RemoteFeed.self)
            let feed = store.list(RemoteFeed.self, request: "all")
            let post = store.resource(RemotePost.self, id: "42")
            _ = try await feed.loadFirstPage()
            try await post.read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Edited in the list")
            ids.append(
                try await expectQueued { () async throws(NetworkError) in
                    _ = try await feed.update(edited, optimistic: edited)
                })
            ids.append(
                try await expectQueued { () async throws(NetworkError) in
                    try await feed.delete(Post(id: "44", title: "Gone soon"), optimistic: true)
                })
            // Without an optimistic item the list cannot say which item an update changes: not kept.
            await #expect(throws: NetworkError.self) { try await feed.update(Post(id: "43", title: "Lost")) }
            // A change through a resource of a type not given is not kept either.
            await #expect(throws: NetworkError.self) { try await post.update(edited, optimistic: edited) }
            #expect(post.state.value == edited)
            #expect(feed.items.map(\.id) == ["42", "43"])
            #expect(
                store.outbox?.pending.map(\.typeName) == [
                    "list:ResourceKitTests.RemoteFeed", "list:ResourceKitTests.RemoteFeed",
                ])
            await store.persistence?.flush()
        }
        let store = try launch(registers: false)
        store.queueWhenOffline(list: RemoteFeed.self)
        let feed = store.list(RemoteFeed.self, request: "all")
        #expect(store.outbox?.pending.map(\.id) == ids)
        #expect(feed.items.first?.title == "Edited in the list")
        #expect(!feed.items.contains { $0.id == "44" })
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try serverPost("42")?.title == "Edited in the list")
        #expect(try serverPost("44") == nil)
        #expect(writes.map(\.method) == [.patch, .delete])
        #expect(try await feed.refresh().map(\.id) == ["42", "43"])
    }

    @Test func theFirstAttemptCarriesTheKeyItIsKeptUnder() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        // The connection drops after the request left: logged by the server, kept by the client.
        backend.injectFault(.dropConnection)
        let edited = Post(id: "42", title: "Maybe applied")
        let id = try await expectQueued { () async throws(NetworkError) in
            _ = try await post.update(edited, optimistic: edited)
        }
        #expect(writes.map { $0.headers["Idempotency-Key"] } == [id])
        await store.outbox?.replay()
        #expect(writes.map { $0.headers["Idempotency-Key"] } == [id, id])
        #expect(try serverPost("42")?.title == "Maybe applied")
    }

    @Test func onReplayA401OrAny5xxKeepsTheChangeAndAnUndecodableAnswerLandsAndIsReadAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        let observing = post.states
        try await post.read("42")
        let edited = try await keepOffline(post, Post(id: "42", title: "Kept")).post
        backend.isReachable = true
        for status in [401, 501, 507] {
            backend.failNext(1, status: status)
            await store.outbox?.replay()
            #expect(store.outbox?.pending.count == 1, "after a \(status)")
            #expect(post.state.value == edited)
        }
        // The server takes it, but its answer does not decode: landed, and the observed resource reads it again.
        backend.injectFault(.malformedBody)
        let reads = backend.requestLog.filter { $0.method == .get }.count
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try serverPost("42")?.title == "Kept")
        #expect(backend.requestLog.filter { $0.method == .get }.count == reads + 1)
        #expect(post.state == .available(edited))
        _ = observing
    }

    @Test func aChangeOfATypeNotKeptFailsWhileOneOfItsItemIsKept() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await keepOffline(post, Post(id: "42", title: "Kept"))
        backend.isReachable = true
        // Through a list whose type is not kept: it would overtake the kept change, so it fails, unsent.
        let feed = store.list(RemoteFeed.self, request: "all")
        let overtaking = Post(id: "42", title: "Overtaking")
        let error = await #expect(throws: NetworkError.self) {
            try await feed.update(overtaking, optimistic: overtaking)
        }
        #expect(error?.code == .invalidRequest)
        #expect(writes.isEmpty)
        // Another item goes through.
        try await feed.update(Post(id: "43", title: "Fine"))
        #expect(writes.count == 1)
    }

    @Test func anOutboxWhoseKeysCannotBeListedNeverOverwritesAKeptChange() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        final class UnlistableOnce: EntryStorage {
            let base: FileEntryStorage
            let fails = Mutex(true)
            init(_ base: FileEntryStorage) { self.base = base }
            func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try base.entry(for: key) }
            func store(_ entries: [PersistedEntry]) throws(NetworkError) { try base.store(entries) }
            func removeEntries(for keys: [String]) throws(NetworkError) { try base.removeEntries(for: keys) }
            func removeAll() throws(NetworkError) { try base.removeAll() }
            func allKeys() throws(NetworkError) -> [String] {
                if fails.withLock({ $0 }) { throw .file("the directory cannot be read now") }
                return try base.allKeys()
            }
        }
        let outboxDirectory = directory.appendingPathComponent("outbox")
        do {
            let store = try launch()
            try await store.resource(RemotePost.self, id: "42").read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "First")
            _ = try await expectQueued { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "42").update(edited, optimistic: edited)
            }
        }
        let storage = UnlistableOnce(try FileEntryStorage(directory: outboxDirectory, maximumBytes: .max))
        let store = try launch(outbox: storage)
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(store.outbox?.lastError?.code == .file)
        let second = Post(id: "43", title: "Second")
        _ = try await expectQueued { () async throws(NetworkError) in
            _ = try await store.resource(RemotePost.self, id: "43").update(second, optimistic: second)
        }
        storage.fails.withLock { $0 = false }
        #expect(try storage.allKeys().count == 2)
        let next = try launch()
        #expect(next.outbox?.pending.map(\.itemID) == ["42", "43"])
    }

    @Test func aCreateThroughAListIsKeptShownNowhereAndPlacedWhenItLands() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // A backend that refuses a post without a title, as PocketBase's rules would.
        let strict = InMemoryBackend(basePath: "/api")
        strict.addCollection("posts", requiredFields: ["title"])
        try strict.seed([Post(id: "42", title: "Hello"), Post(id: "43", title: "Bye")], into: "posts")
        func launchStrict() throws -> ResourceStore {
            let persistence = StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
            let session = NetworkSession(baseURL: "http://test.local/api", transport: strict, timeLimit: nil)
            let store = ResourceStore(session: session, persistence: persistence)
            store.queueWhenOffline(list: RemoteFeed.self)
            return store
        }
        var ids: [String] = []
        do {
            let store = try launchStrict()
            let latest = store.list(RemoteFeed.self, request: "latest")
            _ = try await latest.loadFirstPage()
            strict.isReachable = false
            for post in [
                Post(id: "new1", title: "Written on the train"), Post(id: "new2", title: ""),
                Post(id: "new3", title: "Lands after the refusal"),
            ] {
                ids.append(
                    try await expectQueued { () async throws(NetworkError) in _ = try await latest.create(post) })
            }
            // No id before the server gives one: shown nowhere yet.
            #expect(latest.items.map(\.id) == ["42", "43"])
            #expect(store.outbox?.pending.map(\.kind) == [.create, .create, .create])
            #expect(store.outbox?.pending.map(\.itemID) == ["", "", ""])
            #expect(store.outbox?.pending.map(\.id) == ids)
        }
        let store = try launchStrict()
        let failures = try #require(store.outbox).failures()
        let latest = store.list(RemoteFeed.self, request: "latest")
        let oldest = store.list(RemoteFeed.self, request: "oldest")
        strict.isReachable = true
        _ = try await latest.refresh()
        _ = try await oldest.refresh()
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        let server = try strict.records(Post.self, in: "posts")
        #expect(server.map(\.id).sorted() == ["42", "43", "new1", "new3"])
        // Placed as any create in the store: at the start of "latest", at the end of "oldest".
        #expect(latest.items.map(\.id) == ["new3", "new1", "42", "43"])
        #expect(oldest.items.map(\.id) == ["42", "43", "new1", "new3"])
        // The refused one is reported; it held back nothing (a create names no item).
        var iterator = failures.makeAsyncIterator()
        let failure = await iterator.next()
        #expect(failure?.change.id == ids[1])
        #expect(failure?.change.kind == .create)
        #expect(failure?.error.statusCode == 400)
        #expect(failure?.after == nil)
    }

    @Test func aCreateThatLandedButStayedOnDiskIsNotMadeTwice() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FlakyRemovals(
            try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
        do {
            let store = try launch(outbox: storage, registers: false)
            store.queueWhenOffline(list: RemoteFeed.self)
            let feed = store.list(RemoteFeed.self, request: "latest")
            backend.isReachable = false
            _ = try await expectQueued { () async throws(NetworkError) in
                _ = try await feed.create(Post(id: "", title: "Once only"))
            }
            backend.isReachable = true
            storage.failsRemovals.withLock { $0 = true }
            await store.outbox?.replay()
            #expect(store.outbox?.lastError?.code == .file)
        }
        storage.failsRemovals.withLock { $0 = false }
        let store = try launch(outbox: storage, registers: false)
        store.queueWhenOffline(list: RemoteFeed.self)
        #expect(store.outbox?.pending.map(\.kind) == [.create])
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        // Sent twice with one key; the server made one post.
        #expect(writes.map(\.method) == [.post, .post])
        #expect(Set(writes.map { $0.headers["Idempotency-Key"] }).count == 1)
        #expect(backend.idempotentRepeats == 1)
        #expect(try backend.records(Post.self, in: "posts").filter { $0.title == "Once only" }.count == 1)
    }

    @Test func aRefusedChangeLeavesTheServersLastValueOnDisk() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            // Writes wait until the flush: by then the resource shows the refusal over the value it read.
            let store = try launch(writeDelay: .seconds(60))
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            backend.failNext(1, status: 422)
            await #expect(throws: NetworkError.self) { try await post.update(Post(id: "42", title: "Refused")) }
            #expect(post.state.error?.statusCode == 422)
            await store.persistence?.flush()
        }
        let post = try launch().resource(RemotePost.self, id: "42")
        #expect(post.state == .available(Post(id: "42", title: "Hello")))
        #expect(post.isRestored)
    }

    @Test func wipeRollsBackAndForgetsEveryKeptChange() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await keepOffline(post, Post(id: "42", title: "Someone else's"))
        try await store.wipe()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.state.value == Post(id: "42", title: "Hello"))
        #expect(try launch().outbox?.pending.isEmpty == true)
    }

    @Test func damagedOrForeignFilesInTheOutboxAreDroppedWithoutACrash() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await store.resource(RemotePost.self, id: "42").read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Kept")
            _ = try await expectQueued { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "42").update(edited, optimistic: edited)
            }
            _ = try await expectQueued { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "43").delete(Post(id: "43", title: "Bye"))
            }
        }
        let outboxDirectory = directory.appendingPathComponent("outbox")
        let storage = try FileEntryStorage(directory: outboxDirectory, maximumBytes: .max)
        // One change's file damaged, one entry that is not a change, one change whose record is not JSON.
        let keys = try storage.allKeys().sorted()
        #expect(keys.count == 2)
        let damaged = outboxDirectory.appendingPathComponent(FileEntryStorage.fileName(forKey: keys[1]))
        var bytes = try Data(contentsOf: damaged)
        bytes[bytes.count - 3] ^= 0xFF
        try bytes.write(to: damaged)
        try storage.store([
            PersistedEntry(key: "change-99999999999999999999", value: Data("not a record".utf8), loadedAt: Date()),
            PersistedEntry(key: "something else", value: Data(), loadedAt: Date()),
        ])
        let store = try launch()
        #expect(store.outbox?.pending.map(\.kind) == [.update])
        #expect(store.resource(RemotePost.self, id: "42").state.value?.title == "Kept")
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(try serverPost("42")?.title == "Kept")
        #expect(try serverPost("43") != nil)
    }
}
