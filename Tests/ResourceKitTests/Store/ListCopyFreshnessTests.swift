import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The feed of `RemoteFeed`, declaring that its items are the whole posts a read answers.
struct CompleteFeed: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListRequest = String
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static let itemsAreComplete = true
    static func listEndpoint(for feed: String) -> Endpoint { Endpoint(.get, "posts").setting(query: "feed", to: feed) }
}

/// A resource a store makes while a list shows its item starts from the list's copy: stale by default, as fresh
/// as the list's page when the list's type declares `itemsAreComplete`.
@Suite(.timeLimit(.minutes(1))) struct ListCopyFreshnessTests {
    let clock = ManualClock()

    @Test func aResourceMadeFromACompleteListsCopyIsAsFreshAsItsPage() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(CompleteFeed.self, request: "all")
        try await feed.loadFirstPage()
        clock.advance(by: .seconds(3))
        let post = store.resource(RemoteCachedPost.self, id: "42")
        let recorder = post.recordStates()
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(try await post.read("42", policy: .staleWhileRevalidate) == storePosts[1])
        #expect(backend.requestLog.count == 1)
        // `maxAge` (5 s) after the page, not after the resource was made: stale.
        clock.advance(by: .seconds(2))
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts/42"])
        #expect(
            try await recorder.waitForCount(3) == [
                .available(storePosts[1]), .loading(previous: storePosts[1]), .available(storePosts[1]),
            ])
        extendLifetime(feed)
    }

    @Test func aResourceMadeFromAPreviewListsCopyStartsStale() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(RemoteFeed.self, request: "all")
        try await feed.loadFirstPage()
        let post = store.resource(RemoteCachedPost.self, id: "42")
        #expect(post.state == .available(storePosts[1]))
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts/42"])
        // The read's answer makes it fresh.
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(backend.requestLog.count == 2)
        extendLifetime(feed)
    }

    @Test func staleWhileRevalidateShowsACompleteCopyWithoutALoadingState() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(CompleteFeed.self, request: "all")
        try await feed.loadFirstPage()
        let post = store.resource(RemoteCachedPost.self, id: "41")
        let recorder = post.recordStates()
        #expect(try await post.read("41", policy: .staleWhileRevalidate) == storePosts[0])
        #expect(post.state == .available(storePosts[0]))
        #expect(backend.requestLog.count == 1)
        // The only state it showed; a later change is the next one recorded.
        await store.invalidate(RemoteCachedPost.self, id: "41")
        #expect(
            try await recorder.waitForCount(3) == [
                .available(storePosts[0]), .loading(previous: storePosts[0]), .available(storePosts[0]),
            ])
        extendLifetime(feed)
    }

    @Test func theCopyIsAsOldAsTheListsFirstPageAndARefreshRenewsIt() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(CompleteFeed.self, request: "all")
        try await feed.loadFirstPage()
        clock.advance(by: .seconds(6))
        let old = store.resource(RemoteCachedPost.self, id: "41")
        try await old.read("41", policy: .skipIfFresh)
        #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts/41"])
        try await feed.refresh()
        clock.advance(by: .seconds(4))
        let renewed = store.resource(RemoteCachedPost.self, id: "43")
        try await renewed.read("43", policy: .skipIfFresh)
        #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts/41", "/api/posts"])
        extendLifetime((feed, old, renewed))
    }

    @Test func invalidatingAnItemMakesEveryCopyOfTheListStaleUntilItsNextFirstPage() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(CompleteFeed.self, request: "all")
        try await feed.loadFirstPage()
        await store.invalidate(RemoteCachedPost.self, id: "42")
        for post in storePosts {
            let resource = store.resource(RemoteCachedPost.self, id: post.id)
            #expect(try await resource.read(post.id, policy: .skipIfFresh) == post)
        }
        #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts/41", "/api/posts/42", "/api/posts/43"])
        // An invalidation of another type's values leaves the list's copies alone.
        try await feed.refresh()
        await store.invalidate(RemoteCachedPost.self) { _ in false }
        backend.clearLog()
        // The refresh made the copies fresh again; an invalidation that matches nothing leaves them so.
        let fresh = store.resource(RemoteCachedPost.self, id: "41")
        #expect(try await fresh.read("41", policy: .skipIfFresh) == storePosts[0])
        #expect(backend.requestLog.isEmpty)
        extendLifetime(feed)
    }

    @Test(arguments: [false, true])
    func aCopyAlsoHeldByAPreviewListIsStale(completeLoadsLast: Bool) async throws {
        // Each list hears the other's page: both hold the item at the same rank, whichever loaded last. The
        // store may visit them in either order (its registry is keyed by object), so 20 stores try both.
        for _ in 0..<20 {
            let (store, backend) = try makeStore(clock: clock)
            let complete = store.list(CompleteFeed.self, request: "all")
            let preview = store.list(RemoteFeed.self, request: "all")
            if completeLoadsLast {
                try await preview.loadFirstPage()
                try await complete.loadFirstPage()
            } else {
                try await complete.loadFirstPage()
                try await preview.loadFirstPage()
            }
            let post = store.resource(RemoteCachedPost.self, id: "42")
            try await post.read("42", policy: .skipIfFresh)
            #expect(backend.requestLog.map(\.path) == ["/api/posts", "/api/posts", "/api/posts/42"])
            extendLifetime((complete, preview, post))
        }
    }

    @Test func aRefreshAnswered304RenewsTheCopiesAndEveryHolder() async throws {
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: nil, clock: clock)
        let store = ResourceStore(session: session)
        let feed = store.list(CompleteFeed.self, request: "all")
        var page = feedPage(storePosts)
        page.headers["ETag"] = "\"feed-1\""
        transport.answer(0, .success(page))
        try await feed.loadFirstPage()
        let held = store.resource(RemoteCachedPost.self, id: "41")
        clock.advance(by: .seconds(6))
        // Stale now, the held resource and the copies alike; the server's page has not changed.
        transport.answer(1, .success(HTTPResponse(statusCode: 304, headers: ["ETag": "\"feed-1\""], body: Data())))
        #expect(try await feed.refresh() == storePosts)
        #expect(transport.requests[1].value(forHTTPHeaderField: "If-None-Match") == "\"feed-1\"")
        let made = store.resource(RemoteCachedPost.self, id: "43")
        #expect(try await made.read("43", policy: .skipIfFresh) == storePosts[2])
        #expect(try await held.read("41", policy: .skipIfFresh) == storePosts[0])
        #expect(transport.requestCount == 2)
        extendLifetime((feed, held, made))
    }
}
