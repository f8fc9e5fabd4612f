import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import Testing

/// Changes kept through lists: updates, deletes and creates (the setup is in OutboxTests.swift).
extension OutboxTests {
    @Test func changesThroughAListAreKeptWhenItsTypeIsGiven() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var ids: [String] = []
        do {
            let store = try launch(queueing: [.list(RemoteFeed.self)])
            let feed = store.list(RemoteFeed.self, request: "all")
            let post = store.resource(RemotePost.self, id: "42")
            _ = try await feed.loadFirstPage()
            try await post.read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Edited in the list")
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
                    _ = try await feed.update(edited, optimistic: edited)
                })
            ids.append(
                try await expectKept(store.outbox) { () async throws(NetworkError) in
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
                    "list:StoreTestSupport.RemoteFeed", "list:StoreTestSupport.RemoteFeed",
                ])
            await store.persistence?.flush()
        }
        let store = try launch(queueing: [.list(RemoteFeed.self)])
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

    @Test func aCreateThroughAListIsKeptShownNowhereAndPlacedWhenItLands() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // A backend that refuses a post without a title, as PocketBase's rules would.
        let strict = InMemoryBackend(basePath: "/api")
        strict.addCollection("posts", requiredFields: ["title"])
        try strict.seed([Post(id: "42", title: "Hello"), Post(id: "43", title: "Bye")], into: "posts")
        func launchStrict() throws -> ResourceStore {
            let persistence = StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
                queueWhenOffline: [.list(RemoteFeed.self)])
            let session = NetworkSession(baseURL: "http://test.local/api", transport: strict, timeLimit: nil)
            let store = ResourceStore(session: session, persistence: persistence)
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

    @Test func aKeptCreateWithAnOptimisticItemShowsEverywhereAcrossARestartUntilItLands() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let draft = Post(id: "draft-1", title: "Written on the train")
        let id: String
        do {
            let store = try launch(queueing: [.list(RemoteFeed.self)])
            let all = store.list(RemoteFeed.self, request: "all")
            let latest = store.list(RemoteFeed.self, request: "latest")
            _ = try await all.loadFirstPage()
            _ = try await latest.loadFirstPage()
            backend.isReachable = false
            id = try await expectKept(store.outbox) { () async throws(NetworkError) in
                _ = try await all.create(Post(id: "", title: "Written on the train"), optimistic: draft)
            }
            // At the end of the list that made it, at the start of "latest"; it names no item of the server's.
            #expect(all.items.map(\.id) == ["42", "43", "44", "draft-1"])
            #expect(all.state.value?.map(\.id) == ["42", "43", "44", "draft-1"])
            #expect(latest.items.map(\.id) == ["draft-1", "42", "43", "44"])
            #expect(store.outbox?.pending.map(\.itemID) == [""])
            await store.persistence?.flush()
        }
        // The next launch: the lists start from disk and show the kept create before any request.
        let store = try launch(queueing: [.list(RemoteFeed.self)])
        let latest = store.list(RemoteFeed.self, request: "latest")
        let oldest = store.list(RemoteFeed.self, request: "oldest")
        let all = store.list(RemoteFeed.self, request: "all")
        #expect(latest.isRestored)
        #expect(latest.items.map(\.id) == ["draft-1", "42", "43", "44"])
        // Which list made it is not kept: after a restart it shows where lists place created items only.
        #expect(all.items.map(\.id) == ["42", "43", "44"])
        #expect(oldest.state == .idle)
        let recorder = latest.recordStates()
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        let created = try #require(try backend.records(Post.self, in: "posts").first { $0.title == draft.title })
        #expect(created.id != "draft-1")
        // The server's item takes the placeholder's place in one change of state.
        let states = try await recorder.waitForCount(2)
        #expect(states.map { $0.items.map(\.id) } == [["draft-1", "42", "43", "44"], [created.id, "42", "43", "44"]])
        #expect(writes.map { $0.headers["Idempotency-Key"] } == [id])
        extendLifetime((latest, oldest, all))
    }

    /// In the list that made it, a kept create's placeholder stays at the end, where an answer goes, whatever the
    /// list's type places created items: while it is tried, once it is kept, and when the server's item lands.
    @Test func aKeptCreatesPlaceholderNeverMovesInTheListThatMadeIt() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.list(RemoteFeed.self)])
        // "latest" places posts created elsewhere at its start.
        let latest = store.list(RemoteFeed.self, request: "latest")
        _ = try await latest.loadFirstPage()
        let recorder = latest.recordStates()
        _ = try await recorder.waitForCount(1)
        backend.isReachable = false
        let draft = Post(id: "draft-1", title: "Written on the train")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await latest.create(Post(id: "", title: draft.title), optimistic: draft)
        }
        #expect(latest.items.map(\.id) == ["42", "43", "44", "draft-1"])
        backend.isReachable = true
        await store.outbox?.replay()
        let created = try #require(try backend.records(Post.self, in: "posts").first { $0.title == draft.title })
        #expect(latest.items.map(\.id) == ["42", "43", "44", created.id])
        // Every state, in order: the placeholder appears at the end, stays there as the outbox takes it over, and
        // the server's item takes its place.
        let states = try await recorder.waitForCount(4)
        recorder.stop()
        #expect(
            states.map { $0.items.map(\.id) } == [
                ["42", "43", "44"], ["42", "43", "44", "draft-1"], ["42", "43", "44", "draft-1"],
                ["42", "43", "44", created.id],
            ])
    }

    @Test func aKeptCreateLandingInTheSameRunTakesItsPlaceholdersPlaceInTheListThatMadeIt() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.list(RemoteFeed.self)])
        // "all" places no item created elsewhere: only its own create puts the placeholder, and the answer, there.
        let all = store.list(RemoteFeed.self, request: "all")
        _ = try await all.loadFirstPage()
        let recorder = all.recordStates()
        backend.isReachable = false
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await all.create(Post(id: "", title: "Draft"), optimistic: Post(id: "draft-1", title: "Draft"))
        }
        #expect(all.state.value?.map(\.id) == ["42", "43", "44", "draft-1"])
        backend.isReachable = true
        await store.outbox?.replay()
        let created = try #require(try backend.records(Post.self, in: "posts").first { $0.title == "Draft" })
        #expect(all.items.map(\.id) == ["42", "43", "44", created.id])
        let states = try await recorder.waitForCount(4)
        // The kept change's layer arrives over the list's own: one more state showing the same items.
        #expect(
            states.map { $0.items.map(\.id) } == [
                ["42", "43", "44"], ["42", "43", "44", "draft-1"], ["42", "43", "44", "draft-1"],
                ["42", "43", "44", created.id],
            ])
    }

    @Test func aRefusedKeptCreateLeavesEveryList() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.list(RemoteFeed.self)])
        let failures = try #require(store.outbox).failures()
        let latest = store.list(RemoteFeed.self, request: "latest")
        _ = try await latest.loadFirstPage()
        backend.isReachable = false
        let draft = Post(id: "draft-1", title: "Refused")
        let id = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await latest.create(Post(id: "42", title: "Refused"), optimistic: draft)
        }
        // At the end of the list that made it, where it was shown while it was tried.
        #expect(latest.items.map(\.id) == ["42", "43", "44", "draft-1"])
        backend.isReachable = true
        // A post with an id the server already has: refused with a 400.
        await store.outbox?.replay()
        var iterator = failures.makeAsyncIterator()
        let failure = await iterator.next()
        #expect(failure?.change.id == id)
        #expect(failure?.change.kind == .create)
        #expect(latest.items.map(\.id) == ["42", "43", "44"])
        #expect(store.outbox?.pending.isEmpty == true)
    }

    @Test func aCreateThatLandedButStayedOnDiskIsNotMadeTwice() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FlakyRemovals(
            try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
        do {
            let store = try launch(outbox: storage, queueing: [.list(RemoteFeed.self)])
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
        let store = try launch(outbox: storage, queueing: [.list(RemoteFeed.self)])
        #expect(store.outbox?.pending.map(\.kind) == [.create])
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)
        // Sent twice with one key; the server made one post.
        #expect(writes.map(\.method) == [.post, .post])
        #expect(Set(writes.map { $0.headers["Idempotency-Key"] }).count == 1)
        #expect(backend.idempotentRepeats == 1)
        #expect(try backend.records(Post.self, in: "posts").filter { $0.title == "Once only" }.count == 1)
    }
}
