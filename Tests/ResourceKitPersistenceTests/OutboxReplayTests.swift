import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

@testable import ResourceKitPersistence

/// The outbox's order, cancellation, exactly-once, lists, creates and damaged storage (the setup is in
/// OutboxTests.swift).
extension OutboxTests {
    @Test func aChangeOfAnItemWithAKeptChangeWaitsBehindItEvenOnline() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        let first = Post(id: "42", title: "First")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await post.update(first, optimistic: first)
        }
        backend.isReachable = true
        let second = Post(id: "42", title: "Second")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
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
        let id = try await expectKept(store.outbox) { () async throws(NetworkError) in
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
        let store = try launch(queueing: [])
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
    }

    @Test func aRefusalWhileOnlineIsNotKeptOnlyAnUnreachableServerIs() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let edited = Post(id: "42", title: "Refused")
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
            _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
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

    @Test func theFirstAttemptCarriesTheKeyItIsKeptUnder() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        // The connection drops after the request left: logged by the server, kept by the client.
        backend.injectFault(.dropConnection)
        let edited = Post(id: "42", title: "Maybe applied")
        let id = try await expectKept(store.outbox) { () async throws(NetworkError) in
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
        let edited = try await keepOffline(post, Post(id: "42", title: "Kept"), in: store).post
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
        try await keepOffline(post, Post(id: "42", title: "Kept"), in: store)
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
            let fails = Locked(true)
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
            _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "42").update(edited, optimistic: edited)
            }
        }
        let storage = UnlistableOnce(try FileEntryStorage(directory: outboxDirectory, maximumBytes: .max))
        let store = try launch(outbox: storage)
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(store.outbox?.lastError?.code == .file)
        let second = Post(id: "43", title: "Second")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await store.resource(RemotePost.self, id: "43").update(second, optimistic: second)
        }
        storage.fails.withLock { $0 = false }
        #expect(try storage.allKeys().count == 2)
        let next = try launch()
        #expect(next.outbox?.pending.map(\.itemID) == ["42", "43"])
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
        try await keepOffline(post, Post(id: "42", title: "Someone else's"), in: store)
        try await store.wipe()
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.state.value == Post(id: "42", title: "Hello"))
        // Not one byte of the user's data stays on disk, in the entries or in the outbox.
        #expect(Self.files(under: directory) == [])
        #expect(try launch().outbox?.pending.isEmpty == true)
    }

    /// A resource alive during a wipe (an old screen of the previous user) keeps nothing after it: its offline
    /// change fails instead of going into the emptied outbox, to be sent later with someone else's credentials.
    @Test func aHolderFromBeforeAWipeKeepsNoChange() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await store.wipe()
        backend.isReachable = false
        let edited = Post(id: "42", title: "After the logout")
        let error = await #expect(throws: NetworkError.self) { try await post.update(edited, optimistic: edited) }
        #expect(error?.isUnreachable == true)
        #expect(error?.code != .queued)
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.state.value == Post(id: "42", title: "Hello"))
        // A resource made after the wipe keeps its change as usual.
        let current = store.resource(RemotePost.self, id: "43")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await current.update(Post(id: "43", title: "Kept"), optimistic: Post(id: "43", title: "Kept"))
        }
        #expect(store.outbox?.pending.count == 1)
    }

    /// The files under `directory`, at any depth, relative to it.
    static func files(under directory: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        return (enumerator?.allObjects as? [URL] ?? [])
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .map { $0.path.replacingOccurrences(of: directory.path, with: "") }
            .sorted()
    }

    @Test func damagedOrForeignFilesInTheOutboxAreDroppedWithoutACrash() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await store.resource(RemotePost.self, id: "42").read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Kept")
            _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "42").update(edited, optimistic: edited)
            }
            _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
                _ = try await store.resource(RemotePost.self, id: "43").delete(Post(id: "43", title: "Bye"))
            }
        }
        let outboxDirectory = directory.appendingPathComponent("outbox")
        let storage = try FileEntryStorage(directory: outboxDirectory, maximumBytes: .max)
        // One change's record damaged, one entry that is not a change, one change whose record is not JSON.
        let keys = try storage.allKeys().sorted()
        #expect(keys.count == 2)
        let record = try #require(storage.location(ofKey: keys[1]))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: record.path))
        bytes[record.offset + record.length - 12] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: record.path))
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

    @Test func aChangeTheServerTookCannotBeCancelledWhileItLands() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FlakyRemovals(
            try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
        let store = try launch(outbox: storage)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let (edited, id) = try await keepOffline(post, Post(id: "42", title: "Taken by the server"), in: store)
        backend.isReachable = true
        // The server takes the change; its removal from disk is held, between the answer and the landing.
        let hold = DispatchSemaphore(value: 0)
        storage.holds.withLock { $0 = hold }
        let outbox = try #require(store.outbox)
        let replay = Task { await outbox.replay() }
        try await storage.removalStarted.wait()
        #expect(try serverPost("42")?.title == edited.title)
        // The cancel either answers at once, or (were the change no longer "being sent") takes it off the list and
        // waits for the disk: either way the hold is released only once it got that far.
        let cancelled = Watched<Bool?>(nil)
        let cancel = Task {
            let result = try await outbox.cancel(id)
            cancelled.withLock { $0 = result }
            return result
        }
        try await waitUntil("the cancel answered or took the change") {
            cancelled.value != nil || outbox.pending.isEmpty
        }
        hold.signal()
        #expect(try await cancel.value == false)
        await replay.value
        #expect(outbox.pending.isEmpty)
        #expect(post.state.value == edited)
        #expect(try serverPost("42")?.title == edited.title)
    }
}
