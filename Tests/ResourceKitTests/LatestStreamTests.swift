import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// `states(buffering: .latest)`: the newest state, in order, each once; an unread stream holds nothing, and a
/// stream unregisters however it ends.
@Suite(.timeLimit(.minutes(1))) struct LatestStreamTests {
    private func post(_ title: String) -> Post { Post(id: "42", title: title) }

    /// The first state is the current one; a consumer that reads later gets the newest state only.
    @Test func aSlowConsumerGetsTheNewestStateOnly() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed([post("v2")], into: "posts")
        let live = Resource<RemotePost>(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil),
            state: .available(post("v1")))
        var liveIterator = live.states(buffering: .latest).makeAsyncIterator()
        #expect(await liveIterator.next() == .available(post("v1")))
        // `loading` and `available` both happen before the consumer asks: it gets `available`, once.
        _ = try await live.read("42")
        #expect(await liveIterator.next() == .available(post("v2")))
        #expect(live.observerCount == 1)
    }

    /// A consumer that waits gets every change that happens while it waits, in order.
    @Test func aWaitingConsumerGetsEachChangeInOrder() async throws {
        let (store, _) = try makeStore()
        let list = store.list(RemoteFeed.self, request: "all")
        let stream = list.states(buffering: .latest)
        let seen = Watched<[Int]>([])
        let consumer = Task {
            for await state in stream {
                seen.withLock { $0.append(state.pagination.pagesLoaded) }
                if state.pagination.pagesLoaded == 1, !state.content.isLoading { return }
            }
        }
        try await waitUntil("the consumer read the first state") {
            list.observerCount == 1 && !seen.value.isEmpty
        }
        _ = try await list.loadFirstPage()
        await consumer.value
        let pages = seen.withLock { $0 }
        #expect(pages.first == 0)
        #expect(pages.last == 1)
        #expect(pages == pages.sorted())
        #expect(list.items == storePosts)
    }

    /// Cancelling the consumer, or dropping an unread stream, unregisters it.
    @Test func aStreamUnregistersWhenCancelledOrDropped() async throws {
        let resource = Resource<RemotePost>(state: .available(post("v1")))
        let stream = resource.states(buffering: .latest)
        let consumer = Task { for await _ in stream {} }
        try await waitUntil("the stream registered") { resource.observerCount == 1 }
        consumer.cancel()
        await consumer.value
        #expect(resource.observerCount == 0)
        do {
            let unread = resource.states(buffering: .latest)
            #expect(resource.observerCount == 1)
            extendLifetime(unread)
        }
        #expect(resource.observerCount == 0)
    }

    /// A consumer waiting when the object is freed sees the stream finish.
    @Test func aStreamFinishesWhenItsObjectIsFreed() async throws {
        var resource: Resource<RemotePost>? = Resource<RemotePost>(state: .available(post("v1")))
        let stream = try #require(resource).states(buffering: .latest)
        let read = Watched(0)
        let count = Task {
            for await _ in stream { read.withLock { $0 += 1 } }
            return read.value
        }
        // Freed once the consumer has read the first state: it waits for the next, or is about to.
        try await waitUntil("the consumer read the first state") { read.value == 1 }
        resource = nil
        #expect(await count.value == 1)
    }

    /// An unread `.latest` stream holds no old list: each page appends in place, and the stream still gives the
    /// newest state when read.
    @Test func anUnreadStreamGetsTheNewestListWhenRead() async throws {
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: try backend(with: 250), timeLimit: nil)
        let list = ListResource<RemotePagedItems>(session: session, request: ())
        let stream = list.states(buffering: .latest)
        try await list.loadAll()
        var iterator = stream.makeAsyncIterator()
        let state = await iterator.next()
        #expect(state?.items == items(0..<250))
        #expect(state?.pagination.hasMore == false)
    }
}

/// The list's id index, past the sizes a small list reaches: de-duplication across many pages, and changes by id
/// after removals shift positions.
@Suite(.timeLimit(.minutes(1))) struct ListIndexTests {
    @Test func manyPagesStayDeduplicatedAndChangesFindTheirItem() async throws {
        let backend = try backend(with: 250)
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let list = ListResource<RemoteItems>(session: session, request: ())
        try await list.loadAll()
        #expect(list.items == items(0..<250))
        try await list.delete(items(0..<250)[3])
        let edited = Item(id: "i200", n: -1)
        try await list.update(edited)
        var expected = items(0..<250)
        expected.remove(at: 3)
        expected[199] = edited
        #expect(list.items == expected)
        // A refresh rebuilds the index from one page; items of later pages are gone until loaded again.
        try await list.refresh()
        #expect(list.items == expected.prefix(10).map { $0 })
        try await list.loadAll()
        #expect(list.items == expected)
    }
}

/// `.everyChange` streams reading the shared log: every state once, in order, also after their object is freed.
@Suite(.timeLimit(.minutes(1))) struct EveryChangeStreamTests {
    /// Two streams read at different paces; each gets every state, and the freed resource's streams still
    /// yield what they had not read.
    @Test func streamsAtDifferentPacesGetEveryStateAlsoAfterTheObjectIsFreed() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed([Post(id: "42", title: "v2")], into: "posts")
        var resource: Resource<RemotePost>? = Resource<RemotePost>(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil),
            state: .available(Post(id: "42", title: "v1")))
        let eager = try #require(resource).states
        let late = try #require(resource).states
        var eagerIterator = eager.makeAsyncIterator()
        #expect(await eagerIterator.next() == .available(Post(id: "42", title: "v1")))
        _ = try await resource?.read("42")
        let expected: [ResourceState<Post>] = [
            .available(Post(id: "42", title: "v1")), .loading(previous: Post(id: "42", title: "v1")),
            .available(Post(id: "42", title: "v2")),
        ]
        #expect(await eagerIterator.next() == expected[1])
        resource = nil
        #expect(await eagerIterator.next() == expected[2])
        #expect(await eagerIterator.next() == nil)
        var seen: [ResourceState<Post>] = []
        for await state in late { seen.append(state) }
        #expect(seen == expected)
    }
}
