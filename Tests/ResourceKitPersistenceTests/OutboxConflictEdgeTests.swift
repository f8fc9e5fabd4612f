import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Conflicts at the edges, and bad input: what no server should do, and what the outbox does then.
extension OutboxTests {
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

    /// A change that landed with an answer that does not decode is the server's value in every holder, one that
    /// nobody observes included, and after a restart; the next change is made on the item as the server had it
    /// after the landing, not on the value from before it.
    @Test func aLandedChangeWhoseAnswerDoesNotDecodeIsShownEverywhereAndTheNextOneIsMadeOnIt() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = Post(id: "42", title: "First")
        let tag: String
        do {
            let store = try launch(transport: EmptyWriteAnswers(base: backend))
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            try await keepOffline(post, first, in: store)
            backend.isReachable = true
            backend.clearLog()
            await store.outbox?.replay()
            // Landed, then read once: every holder shows the item as the server has it, nobody observing.
            #expect(backend.requestLog.map(\.method) == [.patch, .get])
            #expect(store.outbox?.pending.isEmpty == true)
            #expect(post.value == first)
            tag = try #require(try await servedTag("42"))
            await store.persistence?.flush()
        }
        let store = try launch(transport: EmptyWriteAnswers(base: backend))
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.value == first)
        let (_, second) = try await keepOffline(post, Post(id: "42", title: "Second"), in: store)
        #expect(store.outbox?.pending.first?.base?.entityTag == tag)
        backend.isReachable = true
        backend.clearLog()
        await store.outbox?.replay()
        // Sent once, on the read's validator, and landed: no conflict with the device's own write.
        #expect(writes.map { $0.headers["If-Match"] } == [tag])
        #expect(store.outbox?.held.map(\.id).contains(second) == false)
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(try serverPost("42")?.title == "Second")
        #expect(post.value?.title == "Second")
    }

    /// Where the item cannot be read by its id, a change that landed with an answer that does not decode shows
    /// its own value in every holder, marked stale, never the value from before it.
    @Test func aLandedChangeWhoseAnswerDoesNotDecodeShowsItsValueWhereTheItemCannotBeRead() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(
            queueing: [.resources(RemotePost.self), .list(RemoteFeed.self)],
            transport: EmptyWriteAnswers(base: backend))
        let feed = store.list(RemoteFeed.self, request: "all")
        _ = try await feed.loadFirstPage()
        let post = store.resource(RemotePost.self, id: "42")
        backend.isReachable = false
        let mine = Post(id: "42", title: "Mine")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            #expect(try await feed.update(mine, optimistic: mine) == mine)
        }
        backend.isReachable = true
        backend.clearLog()
        await store.outbox?.replay()
        #expect(backend.requestLog.map(\.method) == [.patch])
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.value == mine)
        #expect(feed.items.first { $0.id == "42" } == mine)
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
