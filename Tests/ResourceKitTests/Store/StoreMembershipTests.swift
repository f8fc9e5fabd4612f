import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Testing

/// What a store's resource counts as loaded, and what keeps a store alive.
@Suite(.timeLimit(.minutes(1))) struct StoreMembershipTests {
    /// `.skipIfLoaded` skips only a value loaded by the resource's own read: a copy it started from, shown by
    /// a list, came from a page.
    @Test func skipIfLoadedReadsAValueThatCameFromAnotherHolder() async throws {
        let (store, backend) = try makeStore()
        let list = store.list(RemoteFeed.self, request: "all")
        _ = try await list.loadFirstPage()
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.state == .available(storePosts[1]))
        backend.clearLog()
        #expect(try await post.read("42", policy: .skipIfLoaded) == storePosts[1])
        #expect(backend.requestLog.map(\.path) == ["/api/posts/42"])
        // Loaded now: the next one sends nothing.
        #expect(try await post.read("42", policy: .skipIfLoaded) == storePosts[1])
        #expect(backend.requestLog.count == 1)
        extendLifetime(list)
    }

    /// Once loaded, news from other holders keeps the value current and loaded, and so does the resource's
    /// own update.
    @Test func skipIfLoadedSkipsAValueKeptCurrentByNewsAndUpdates() async throws {
        let (store, backend) = try makeStore()
        let list = store.list(RemoteFeed.self, request: "all")
        let post = store.resource(RemotePost.self, id: "42")
        _ = try await post.read("42")
        let edited = Post(id: "42", title: "Edited in the list")
        _ = try await list.loadFirstPage()
        _ = try await list.update(edited)
        let updated = Post(id: "42", title: "Edited in the resource")
        _ = try await post.update(updated)
        backend.clearLog()
        #expect(try await post.read("42", policy: .skipIfLoaded) == updated)
        #expect(backend.requestLog.isEmpty)
    }

    /// A resource made again from the value a freed one loaded counts it as loaded; one made again from the
    /// value a freed one only started from (a list's copy) does not.
    @Test func aRememberedValueIsLoadedOnlyWhenItsReadLoadedIt() async throws {
        let (store, backend) = try makeStore()
        do { _ = try await store.resource(RemotePost.self, id: "42").read("42") }
        do {
            let list = store.list(RemoteFeed.self, request: "all")
            _ = try await list.loadFirstPage()
            #expect(store.resource(RemotePost.self, id: "43").state == .available(storePosts[2]))
        }
        await waitForLiveCount(0, in: store)
        #expect(store.liveCount == 0)
        #expect(store.rememberedCount == 2)
        backend.clearLog()
        #expect(try await store.resource(RemotePost.self, id: "42").read("42", policy: .skipIfLoaded) == storePosts[1])
        #expect(backend.requestLog.isEmpty)
        #expect(try await store.resource(RemotePost.self, id: "43").read("43", policy: .skipIfLoaded) == storePosts[2])
        #expect(backend.requestLog.map(\.path) == ["/api/posts/43"])
    }

    /// The store's members keep it alive: a store nobody else holds still carries an update from one member
    /// to the others.
    @Test func membersKeepTheirStoreAlive() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(storePosts, into: "posts")
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        weak var weakStore: ResourceStore?
        let (post, list): (Resource<RemotePost>, ListResource<RemoteFeed>) = try await {
            let store = ResourceStore(session: session)
            weakStore = store
            let post = store.resource(RemotePost.self, id: "42")
            let list = store.list(RemoteFeed.self, request: "all")
            _ = try await list.loadFirstPage()
            return (post, list)
        }()
        #expect(weakStore != nil)
        let edited = Post(id: "42", title: "Edited")
        _ = try await post.update(edited)
        #expect(list.items == [storePosts[0], edited, storePosts[2]])
        #expect(weakStore?.liveCount == 2)
        extendLifetime((post, list))
    }

    /// When its last member and every other reference are gone, the store is freed: members hold it, it
    /// holds them weakly, so nothing leaks.
    @Test func aStoreIsFreedWithItsLastMember() async throws {
        let (store, _) = try makeStore()
        // Declared, then set: `weak let` needs Swift 6.3, and 6.3 warns of a `weak var` set only where declared.
        weak var weakStore: ResourceStore?
        weakStore = store
        weak var weakPost: Resource<RemotePost>?
        do {
            var post: Resource<RemotePost>? = store.resource(RemotePost.self, id: "42")
            weakPost = post
            _ = try await post?.read("42")
            _ = consume store
            #expect(weakStore != nil)
            post = nil
        }
        #expect(weakPost == nil)
        #expect(weakStore == nil)
    }

    /// A logout's wipe: what was alive keeps showing the old user's value until it is freed, but none of it
    /// reaches the store again.
    @Test func nothingAliveDuringAWipeReachesTheStoreAfterIt() async throws {
        let (store, backend) = try makeStore()
        var post: Resource<RemotePost>? = store.resource(RemotePost.self, id: "42")
        _ = try await post?.read("42")
        var list: ListResource<RemoteFeed>? = store.list(RemoteFeed.self, request: "all")
        _ = try await list?.loadFirstPage()
        let onlyBefore = store.resource(RemotePost.self, id: "41")
        try await store.wipe()
        #expect(post?.state == .available(storePosts[1]))
        backend.clearLog()
        // Asked for after the wipe: new members, starting from nothing, not from the old ones.
        let fresh = store.resource(RemotePost.self, id: "42")
        #expect(fresh !== post)
        #expect(fresh.state == .idle)
        let freshList = store.list(RemoteFeed.self, request: "all")
        #expect(freshList !== list)
        #expect(freshList.state == .idle)
        #expect(store.resource(RemotePost.self, id: "43").state == .idle)
        // What an old member learns reaches no one: not the new members, not the store's memory, not a live
        // source.
        _ = try await post?.update(Post(id: "42", title: "Old screen"))
        #expect(fresh.state == .idle)
        #expect(freshList.state == .idle)
        #expect(store.liveHolders(of: RemotePost.self).ids == ["42"])
        // Freed after the wipe: not remembered.
        weak var freedPost: Resource<RemotePost>?
        freedPost = post
        post = nil
        list = nil
        #expect(freedPost == nil)
        #expect(store.rememberedCount == 0)
        #expect(store.resource(RemotePost.self, id: "42") === fresh)
        #expect(backend.requestLog.map(\.method) == [.patch])
        extendLifetime((fresh, freshList, onlyBefore))
    }

    /// Freed after the wipe with nothing else holding its item: the next resource of it reads from the server.
    @Test func aResourceFreedAfterAWipeIsNotRemembered() async throws {
        let (store, backend) = try makeStore()
        var post: Resource<RemotePost>? = store.resource(RemotePost.self, id: "42")
        _ = try await post?.read("42")
        try await store.wipe()
        post = nil
        #expect(store.rememberedCount == 0)
        let again = store.resource(RemotePost.self, id: "42")
        #expect(again.state == .idle)
        backend.clearLog()
        #expect(try await again.read("42", policy: .skipIfLoaded) == storePosts[1])
        #expect(backend.requestLog.map(\.path) == ["/api/posts/42"])
    }
}
