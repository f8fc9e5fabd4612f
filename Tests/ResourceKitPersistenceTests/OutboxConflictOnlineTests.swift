import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Conflicts of changes sent online, of changes made on landed values, and of changes made through lists.
extension OutboxTests {
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

    @Test func anOnlineChangeIsConditionalByDefaultAndA412IsHeldNotAnOverwrite() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let tag = try #require(try await servedTag("42"))
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        let mine = Post(id: "42", title: "Mine")
        #expect(try await post.update(mine, optimistic: mine) == mine)
        await outbox.replay()
        // The online write and the replay's, both on the version read, both refused.
        #expect(writes.map(\.method) == [.patch, .patch])
        #expect(writes.map { $0.headers["If-Match"] } == [tag, tag])
        #expect(try serverPost("42") == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(outbox.held.first?.mine(as: Post.self) == mine)
        #expect(post.value == mine)
    }

    @Test func anOnlineChangeThatOptsOutOverwritesAsTheDocsSay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.resources(RemotePost.self, conditionalWhenOnline: false)])
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        backend.clearLog()
        _ = try await post.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
        #expect(writes.map(\.method) == [.patch])
        #expect(writes.first?.headers["If-Match"] == nil)
        #expect(try serverPost("42") == Post(id: "42", title: "Mine"))
        #expect(store.outbox?.pending.isEmpty == true)
    }

    @Test func anOnlineDeletionOfAnItemTheServerDeletedLandsAlthoughItsPreconditionIsRefused() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "43")
        try await post.read("43")
        try await NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            .send(RemotePost.deleteEndpoint(for: Post(id: "43", title: "Bye")))
        let outbox = try #require(store.outbox)
        backend.clearLog()
        #expect(try await post.delete(Post(id: "43", title: "Bye"), optimistic: true) == nil)
        await outbox.replay()
        // Refused online (the item the precondition names is gone), refused on replay, read: gone, landed.
        #expect(
            backend.requestLog.map { "\($0.method) \($0.path)" } == [
                "DELETE /api/posts/43", "DELETE /api/posts/43", "GET /api/posts/43",
            ])
        #expect(writes.allSatisfy { $0.headers["If-Match"] != nil })
        #expect(outbox.pending.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(post.value == nil)
        #expect(try serverPost("43") == nil)
    }

    @Test func aCancelledResolveCallerStillResolvesAndTheNextReplaySendsTheChange() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, id, _) = try await conflictingEdit()
        let outbox = try #require(store.outbox)
        await outbox.replay()
        #expect(outbox.held.map(\.id) == [id])
        backend.clearLog()
        let resolving = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await outbox.resolve(id, with: .keepMine)
        }
        #expect(try await resolving.value)
        // Recorded, not sent: pending again, no longer held, shown; the cancelled caller did not wait.
        #expect(writes.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(outbox.pending.map(\.id) == [id])
        #expect(outbox.pending.first?.isHeld == false)
        #expect(post.value == Post(id: "42", title: "Mine"))
        await outbox.replay()
        #expect(writes.map(\.method) == [.patch])
        #expect(try serverPost("42")?.title == "Mine")
        #expect(outbox.pending.isEmpty)
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
}
