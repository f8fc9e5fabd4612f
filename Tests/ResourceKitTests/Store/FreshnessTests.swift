import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// `.skipIfFresh`, `.staleWhileRevalidate` and invalidation, on a manual clock.
@Suite(.timeLimit(.minutes(1))) struct FreshnessTests {
    let clock = ManualClock()

    @Test func skipIfFreshAnswersWithinTheWindowAndReadsAfterIt() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemoteCachedPost.self, id: "42")
        try await post.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 1)
        clock.advance(by: .milliseconds(4_999))
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(backend.requestLog.count == 1)
        clock.advance(by: .milliseconds(1))
        try await post.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
        // The window starts again at the new answer; a per-call window overrides the type's.
        clock.advance(by: .seconds(2))
        try await post.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
        try await post.read("42", policy: .skipIfFresh(maxAge: .seconds(1)))
        #expect(backend.requestLog.count == 3)
        // `.always` always reads.
        try await post.read("42")
        #expect(backend.requestLog.count == 4)
    }

    @Test func aTypeWithoutMaxAgeIsNeverFresh() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42", policy: .skipIfFresh)
        try await post.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
    }

    @Test func aValueFromAListIsFreshForTheDetail() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemoteCachedPost.self, id: "42")
        try await store.list(RemoteFeed.self, request: "all").loadFirstPage()
        #expect(post.state == .available(storePosts[1]))
        #expect(try await post.read("42", policy: .skipIfFresh) == storePosts[1])
        #expect(backend.requestLog.count == 1)
    }

    @Test func staleWhileRevalidateAnswersAtOnceAndShowsTheRefresh() async throws {
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: nil, clock: clock)
        let post = ResourceStore(session: session).resource(RemoteCachedPost.self, id: "42")
        let recorder = post.recordStates()
        let first = Task { try await post.read("42", policy: .staleWhileRevalidate) }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(postResponse(storePosts[1])))
        #expect(try await first.value == storePosts[1])
        // Fresh: no request, no state change.
        #expect(try await post.read("42", policy: .staleWhileRevalidate) == storePosts[1])
        clock.advance(by: .seconds(5))
        // Stale: the old value at once, and the state shows the read in the background.
        #expect(try await post.read("42", policy: .staleWhileRevalidate) == storePosts[1])
        #expect(post.state == .loading(previous: storePosts[1]))
        try await transport.waitForRequests(2)
        let newer = Post(id: "42", title: "Revalidated")
        transport.answer(1, .success(postResponse(newer)))
        #expect(
            try await recorder.waitForCount(5) == [
                .idle, .loading(previous: nil), .available(storePosts[1]), .loading(previous: storePosts[1]),
                .available(newer),
            ])
    }

    @Test func staleWhileRevalidateWithNoValueReadsAndWaits() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemoteCachedPost.self, id: "42")
        #expect(try await post.read("42", policy: .staleWhileRevalidate) == storePosts[1])
        #expect(post.state == .available(storePosts[1]))
        #expect(backend.requestLog.count == 1)
    }

    @Test func invalidateRefetchesOnlyObservedResources() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let observed = store.resource(RemoteCachedPost.self, id: "42")
        let unobserved = store.resource(RemoteCachedPost.self, id: "43")
        try await observed.read("42")
        try await unobserved.read("43")
        let recorder = observed.recordStates()
        backend.clearLog()
        await store.invalidate(RemoteCachedPost.self)
        #expect(backend.requestLog.map(\.path) == ["/api/posts/42"])
        #expect(
            try await recorder.waitForCount(3) == [
                .available(storePosts[1]), .loading(previous: storePosts[1]), .available(storePosts[1]),
            ])
        // The unobserved one is stale: a fresh-only read asks the server although its window is not over.
        try await unobserved.read("43", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
        try await unobserved.read("43", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
        // The refetched one is fresh again.
        try await observed.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
    }

    @Test func invalidateRefreshesObservedListsOnly() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let observed = store.list(RemoteFeed.self, request: "all")
        let unobserved = store.list(RemoteFeed.self, request: "other")
        try await observed.loadFirstPage()
        try await unobserved.loadFirstPage()
        let recorder = observed.recordStates()
        backend.clearLog()
        await store.invalidate(RemoteFeed.self)
        #expect(backend.requestLog.map { $0.query["feed"] } == ["all"])
        let loaded = ListState(
            content: .available(storePosts), pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3)
        )
        var loading = loaded
        loading.content = .loading(previous: storePosts)
        #expect(try await recorder.waitForCount(3) == [loaded, loading, loaded])
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((observed, unobserved))
    }

    @Test func invalidateByIdAndByPredicate() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let posts = storePosts.map { store.resource(RemoteCachedPost.self, id: $0.id) }
        let recorders = posts.map { $0.recordStates() }
        for (post, value) in zip(posts, storePosts) { try await post.read(value.id) }
        backend.clearLog()
        await store.invalidate(RemoteCachedPost.self, id: "41")
        #expect(backend.requestLog.map(\.path) == ["/api/posts/41"])
        backend.clearLog()
        await store.invalidate(RemoteCachedPost.self) { $0.title.hasPrefix("B") || $0.title.hasPrefix("H") }
        #expect(backend.requestLog.map(\.path).sorted() == ["/api/posts/42", "/api/posts/43"])
        // Each was read once, then once more by its invalidation.
        for (recorder, post) in zip(recorders, storePosts) {
            #expect(
                try await recorder.waitForCount(5) == [
                    .idle, .loading(previous: nil), .available(post), .loading(previous: post), .available(post),
                ])
        }
        // The resources must outlive the invalidations: an optimized build may free a value after its last use.
        extendLifetime(posts)
    }

    @Test func unusualWindowsNeitherCrashNorSkipWrongly() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemoteCachedPost.self, id: "42")
        try await post.read("42")
        // A negative or zero window: never fresh.
        try await post.read("42", policy: .skipIfFresh(maxAge: .seconds(-1)))
        try await post.read("42", policy: .staleWhileRevalidate(maxAge: .zero))
        try await waitUntil("the background read ends") { !post.state.isLoading }
        #expect(backend.requestLog.count == 3)
        // The longest window: fresh however far the clock moves.
        clock.advance(by: .seconds(Int64.max / 2))
        #expect(try await post.read("42", policy: .skipIfFresh(maxAge: .seconds(Int64.max))) == storePosts[1])
        #expect(backend.requestLog.count == 3)
    }
}
