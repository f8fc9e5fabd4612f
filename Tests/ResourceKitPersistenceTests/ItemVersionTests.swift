import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

/// The version of an item belongs to the item, not to the holder that read it: whatever another holder of the
/// store shows of it (a feed, a push, a landing made through a list), the next offline edit keeps the last
/// validator the store knew as its base, and its replay never goes out without a precondition.
extension OutboxTests {
    /// Device B changes post 42 online while A's edit waits; A's replay must be refused, not sent over it.
    /// Reads post 42 through a resource of `store`; returns it with the tag the server gave.
    func readPost42(in store: ResourceStore) async throws -> (Resource<RemotePost>, String) {
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        return (post, try #require(try await servedTag("42")))
    }

    /// Keeps an offline edit "Mine" of post 42 and expects it made on `tag`; returns the change's id.
    func keepMine(_ post: Resource<RemotePost>, on tag: String, in store: ResourceStore) async throws -> String {
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        #expect(store.outbox?.pending.first?.base?.entityTag == tag)
        return id
    }

    func someoneElseChanges42() async throws {
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
    }

    /// Replays and returns the one write sent, checking it named `tag` and was refused and held.
    func expectHeldReplay(of id: String, tag: String, in store: ResourceStore) async throws {
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        #expect(writes.map(\.method) == [.patch])
        #expect(writes.first?.headers["If-Match"] == tag)
        #expect(try serverPost("42") == Post(id: "42", title: "Hello", body: "Theirs"))
        #expect(outbox.held.map(\.id) == [id])
    }

    @Test func aFeedThatShowsTheItemWithoutValidatorsKeepsTheBaseOfTheNextEdit() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        let tag = try #require(try await servedTag("42"))
        // The feed's page carries no validators per item; it shows the same value.
        _ = try await feed.loadFirstPage()
        #expect(feed.items.first { $0.id == "42" } == post.value)
        let id = try await keepMine(post, on: tag, in: store)
        try await someoneElseChanges42()
        try await expectHeldReplay(of: id, tag: tag, in: store)
    }

    @Test func aPushOfTheSameValueKeepsTheBaseOfTheNextEdit() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let (post, tag) = try await readPost42(in: store)
        store.apply(.updated(Post(id: "42", title: "Hello")), as: RemotePost.self)
        let id = try await keepMine(post, on: tag, in: store)
        try await someoneElseChanges42()
        try await expectHeldReplay(of: id, tag: tag, in: store)
    }

    /// A push of another value says the item changed, and brings no validator: the edit made on what it shows
    /// keeps the last one known. Sent with it, the server refuses it; the value it then reads is the one the edit
    /// was made on, so the edit is sent again on the server's validator and lands: nothing was overwritten.
    @Test func aPushOfANewValueLeavesTheLastKnownValidatorAsTheBase() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        let (post, tag) = try await readPost42(in: store)
        try await otherDevice(Post(id: "42", title: "Pushed"))
        store.apply(.updated(Post(id: "42", title: "Pushed")), as: RemotePost.self)
        #expect(post.value == Post(id: "42", title: "Pushed"))
        let id = try await keepMine(post, on: tag, in: store)
        backend.isReachable = true
        backend.clearLog()
        await store.outbox?.replay()
        #expect(writes.map(\.method) == [.patch, .patch])
        #expect(writes.first?.headers["If-Match"] == tag)
        #expect(writes.last?.headers["If-Match"] != tag)
        #expect(try serverPost("42")?.title == "Mine")
        #expect(store.outbox?.held.isEmpty == true)
        #expect(store.outbox?.pending.contains { $0.id == id } == false)
    }

    @Test func anUpdateThatLandsThroughAListGivesEveryHolderItsNewValidator() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.resources(RemotePost.self), .list(RemoteFeed.self)])
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        _ = try await feed.loadFirstPage()
        let edited = Post(id: "42", title: "Through the feed")
        _ = try await feed.update(edited, optimistic: edited)
        #expect(post.value == edited)
        let tag = try #require(try await servedTag("42"))
        let id = try await keepMine(post, on: tag, in: store)
        backend.isReachable = true
        try await otherDevice(Post(id: "42", title: "Hello", body: "Theirs"))
        try await expectHeldReplay(of: id, tag: tag, in: store)
    }

    /// An edit kept through a list is made on the item the store knows: its base is the validator a resource
    /// of the same item read.
    @Test func anOfflineEditThroughAListIsMadeOnTheValidatorAResourceRead() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch(queueing: [.resources(RemotePost.self), .list(RemoteFeed.self)])
        let post = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        try await post.read("42")
        _ = try await feed.loadFirstPage()
        let tag = try #require(try await servedTag("42"))
        backend.isReachable = false
        let edited = Post(id: "42", title: "Mine")
        _ = try await expectKept(store.outbox) { () async throws(NetworkError) in
            _ = try await feed.update(edited, optimistic: edited)
        }
        #expect(store.outbox?.pending.first?.base?.entityTag == tag)
        let id = try #require(store.outbox?.pending.first?.id)
        try await someoneElseChanges42()
        try await expectHeldReplay(of: id, tag: tag, in: store)
    }

    /// A value shown after a push is persisted with the last validator known, marked as not its own: after a
    /// restart, the edit made on it still names that validator.
    @Test func theLastKnownValidatorOutlivesARestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let tag: String
        do {
            let store = try launch()
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            tag = try #require(try await servedTag("42"))
            store.apply(.updated(Post(id: "42", title: "Pushed")), as: RemotePost.self)
            await store.persistence?.flush()
        }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.value == Post(id: "42", title: "Pushed"))
        let (_, _) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        #expect(store.outbox?.pending.first?.base?.entityTag == tag)
    }

    /// The validator kept with a pushed value is not the value's own: a read after a restart does not send it
    /// as `If-None-Match`, which the server would answer `304` for a value the device does not hold.
    @Test func aValueShownAfterAPushIsNotRevalidatedWithAnotherValuesValidator() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            store.apply(.updated(Post(id: "42", title: "Pushed")), as: RemotePost.self)
            await store.persistence?.flush()
        }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.value == Post(id: "42", title: "Pushed"))
        backend.clearLog()
        #expect(try await post.read("42") == Post(id: "42", title: "Hello"))
        #expect(backend.requestLog.map(\.method) == [.get])
        #expect(backend.requestLog.first?.headers["If-None-Match"] == nil)
    }

    /// A persisted value whose validators are its own is revalidated with them after a restart.
    @Test func aPersistedValueWithItsOwnValidatorsIsRevalidatedWithThem() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await store.resource(RemotePost.self, id: "42").read("42")
            await store.persistence?.flush()
        }
        let store = try launch()
        let post = store.resource(RemotePost.self, id: "42")
        let tag = try #require(try await servedTag("42"))
        backend.clearLog()
        #expect(try await post.read("42") == Post(id: "42", title: "Hello"))
        #expect(backend.requestLog.first?.headers["If-None-Match"] == tag)
    }
}
