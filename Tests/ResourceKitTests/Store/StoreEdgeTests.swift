import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// A post whose every value costs as much as an `Int` holds.
struct RemoteCostlyPost: Readable {
    typealias Value = Post
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func cost(of value: Post) -> Int { .max }
}

/// What a store and the testing kit promise at their edges: memory, ages, placeholders, extreme counts.
@Suite(.timeLimit(.minutes(1))) struct StoreEdgeTests {
    /// The largest capacity is `Int.max / 2`, so that no sum of costs can overflow: values that cost more are
    /// not kept, and nothing traps.
    @Test func theLargestCapacityAndCostsDoNotOverflow() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(storePosts, into: "posts")
        let store = ResourceStore(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend), capacity: .max)
        #expect(store.capacity == Int.max / 2)
        for id in ["41", "42", "43"] {
            try await store.resource(RemoteCostlyPost.self, id: id).read(id)
        }
        await waitForLiveCount(0, in: store)
        #expect(store.rememberedCount == 0)
        #expect(ResourceStore(session: makeTimelessSession(backend), capacity: -5).capacity == 0)
    }

    /// A resource freed while its last read had failed is remembered with the value the failure kept, stale.
    @Test func aFailedResourceIsRememberedStale() async throws {
        let clock = ManualClock()
        let (store, backend) = try makeStore(clock: clock)
        var post: Resource<RemotePost>? = store.resource(RemotePost.self, id: "42")
        try await post?.read("42")
        backend.failNext(status: 500)
        await #expect(throws: NetworkError.self) { try await post?.read("42") }
        #expect(post?.state.value == storePosts[1])
        post = nil
        await waitForLiveCount(0, in: store)
        #expect(store.rememberedCount == 1)
        let again = store.resource(RemotePost.self, id: "42")
        #expect(again.state == .available(storePosts[1]))
        #expect(again.age == nil)
        let requests = backend.requestLog.count
        try await again.read("42", policy: .skipIfFresh(maxAge: .seconds(60)))
        #expect(backend.requestLog.count == requests + 1)
    }

    /// An optimistic delete shows no value, so the resource tells no age while it runs.
    @Test func anOptimisticDeleteHasNoAge() async throws {
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: nil, clock: ManualClock())
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let read = Task { try await post.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(postResponse(storePosts[1])))
        _ = try await read.value
        #expect(post.age == .zero)
        let delete = Task { try await post.delete(storePosts[1], optimistic: true) }
        try await transport.waitForRequests(2)
        #expect(post.state == .loading(previous: nil))
        #expect(post.age == nil)
        transport.answer(1, json: "{}", status: 500)
        await #expect(throws: NetworkError.self) { try await delete.value }
        #expect(post.state == .failure(.httpStatus(code: 500, body: Data("{}".utf8)), previous: storePosts[1]))
        #expect(post.age == .zero)
    }

    /// A placeholder list at its end sends nothing for more pages, and no request fails there.
    @Test func aPlaceholderListHasNoMoreToLoad() async throws {
        let list = ListResource<RemoteFeed>.placeholder(request: "latest", count: 3)
        #expect(try await list.loadNextPage().count == 3)
        #expect(try await list.loadAll().count == 3)
        await #expect(throws: NetworkError.self) { try await list.refresh() }
        #expect(ListResource<RemoteFeed>.placeholder(request: "latest", count: .max).items.count == 10_000)
        #expect(ListResource<RemoteFeed>.placeholder(request: "latest", count: -4).items.isEmpty)
        #expect(Post.placeholders(count: .max).count == 10_000)
    }

    /// A fault for every request from now on is one entry, not `Int.max` of them.
    @Test func aFaultForEveryRequestIsOneEntry() async throws {
        let (store, backend) = try makeStore()
        backend.failNext(.max, status: 503)
        let post = store.resource(RemotePost.self, id: "42")
        for _ in 0..<3 {
            do {
                try await post.read("42")
                Issue.record("read")
            } catch {
                #expect(error.statusCode == 503)
            }
        }
        backend.injectFault(.status(500), count: 0)
        backend.injectFault(.status(500), count: -1)
    }

    /// Extreme durations on the testing kit's clock and stubs are clamped to 10⁹ seconds.
    @Test func extremeWaitsOfTheKitAreClamped() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(1e20))
        clock.advance(by: .seconds(1e20))
        #expect(clock.now.offset == .seconds(2_000_000_000))
        let stub = StubTransport()
        stub.stub(.get, "/api/feed", chunks: [Data("a".utf8), Data("b".utf8)], every: .seconds(Int64.max), on: clock)
        let session = NetworkSession(baseURL: "http://test.local/api", transport: stub)
        let response = try await session.bytes(Endpoint(.get, "feed"))
        var chunks = response.body.makeAsyncIterator()
        #expect(try await chunks.next() == Data("a".utf8))
        #expect(
            try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1_000_000_000)] } == [
                .seconds(1_000_000_000)
            ])
        clock.advance(by: .seconds(1_000_000_000))
        #expect(try await chunks.next() == Data("b".utf8))
    }
}
