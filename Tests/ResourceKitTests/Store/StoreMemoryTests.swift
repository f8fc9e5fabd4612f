import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Testing

/// The store's memory bound: at most `capacity` values of resources nobody holds.
@Suite(.timeLimit(.minutes(2))) struct StoreMemoryTests {
    @Test func tenThousandIdsWithABoundOfOneThousandKeepAtMostOneThousandValues() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        let posts = (0..<10_000).map { Post(id: "p\($0)", title: "Post \($0)") }
        try backend.seed(posts, into: "posts")
        let store = ResourceStore(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil),
            capacity: 1_000)
        // One observed resource, held all along: never evicted.
        let observed = store.resource(RemotePost.self, id: "p0")
        let recorder = observed.recordStates()
        try await observed.read("p0")
        for post in posts.dropFirst() {
            let resource = store.resource(RemotePost.self, id: post.id)
            try await resource.read(post.id)
            #expect(store.rememberedCount <= 1_000)
        }
        await waitForLiveCount(1, in: store)
        #expect(store.rememberedCount == 1_000)
        #expect(store.liveCount == 1)
        #expect(observed.state == .available(posts[0]))
        #expect(try await recorder.waitForCount(3).last == .available(posts[0]))
        // The most recent values are remembered, the oldest are gone.
        backend.clearLog()
        #expect(store.resource(RemotePost.self, id: "p9999").state == .available(posts[9999]))
        #expect(store.resource(RemotePost.self, id: "p9000").state == .available(posts[9000]))
        #expect(store.resource(RemotePost.self, id: "p8999").state == .idle)
        #expect(store.resource(RemotePost.self, id: "p1").state == .idle)
        #expect(backend.requestLog.isEmpty)
    }

    @Test func aRememberedValueFollowsUpdatesMadeElsewhere() async throws {
        let (store, _) = try makeStore()
        do { try await store.resource(RemotePost.self, id: "42").read("42") }
        await waitForLiveCount(0, in: store)
        #expect(store.rememberedCount == 1)
        let edited = Post(id: "42", title: "Edited")
        do {
            let list = store.list(RemoteFeed.self, request: "all")
            try await list.loadFirstPage()
            try await list.update(edited)
        }
        await waitForLiveCount(0, in: store)
        #expect(store.liveCount == 0)
        // Nobody held post 42's resource, but the store's memory of it is not stale.
        #expect(store.resource(RemotePost.self, id: "42").state == .available(edited))
    }

    @Test func aRememberedValueIsForgottenWhenTheItemIsDeleted() async throws {
        let (store, _) = try makeStore(capacity: 10)
        do { try await store.resource(RemotePost.self, id: "42").read("42") }
        let list = store.list(RemoteFeed.self, request: "all")
        try await list.loadFirstPage()
        let known = store.resource(RemotePost.self, id: "42")
        #expect(known.state == .available(storePosts[1]))
        try await list.delete(storePosts[1])
        #expect(known.state == .idle)
    }

    @Test func aCapacityOfZeroRemembersNothing() async throws {
        let (store, backend) = try makeStore(capacity: 0)
        do { try await store.resource(RemotePost.self, id: "42").read("42") }
        await waitForLiveCount(0, in: store)
        #expect(store.rememberedCount == 0)
        #expect(store.resource(RemotePost.self, id: "42").state == .idle)
        #expect(ResourceStore(session: store.session, capacity: -5).capacity == 0)
        #expect(backend.requestLog.count == 1)
    }

    @Test func theCapacityBoundsTheTotalCostOfRememberedValues() async throws {
        // Titles: "Forty-one" costs 9, "Hello" 5, "Bye" 3.
        let (store, backend) = try makeStore(capacity: 10)
        for post in storePosts { _ = try await store.resource(RemoteWeighedPost.self, id: post.id).read(post.id) }
        // 9, then 9 + 5 evicts 41, then 5 + 3 fits.
        #expect(store.rememberedCount == 2)
        #expect(store.rememberedCost == 8)
        #expect(store.resource(RemoteWeighedPost.self, id: "41").state == .idle)
        #expect(store.resource(RemoteWeighedPost.self, id: "42").state == .available(storePosts[1]))
        // A value that costs more than the whole capacity is not remembered at all.
        let (small, _) = try makeStore(capacity: 4)
        _ = try await small.resource(RemoteWeighedPost.self, id: "42").read("42")
        #expect(small.rememberedCount == 0)
        #expect(backend.requestLog.count == 3)
    }
}
