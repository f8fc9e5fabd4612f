import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Optimistic creates: a placeholder shown at once in the list that creates and where the store's other lists
/// place created items, then replaced by the server's item in one change of state, or removed.
@Suite(.timeLimit(.minutes(1))) struct OptimisticCreateTests {
    let transport = ControlledTransport()
    let store: ResourceStore
    let placeholder = Post(id: "draft-1", title: "Draft")
    let answered = Post(id: "99", title: "Draft", body: "as the server stored it")

    init() {
        store = ResourceStore(session: makeTimelessSession(transport))
    }

    func listState(_ posts: [Post]) -> ListState<Post> {
        ListState(
            content: .available(posts), pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3))
    }

    /// The lists "all" (which creates; other lists' creates stay out of it), "latest" (created items at its
    /// start) and "oldest" (at its end), each loaded with the three posts, in requests 0–2.
    func loadedLists() async throws -> [ListResource<RemoteFeed>] {
        var lists: [ListResource<RemoteFeed>] = []
        for (index, feed) in ["all", "latest", "oldest"].enumerated() {
            let list = store.list(RemoteFeed.self, request: feed)
            let load = Task { try await list.loadFirstPage() }
            try await transport.waitForRequests(index + 1)
            transport.answer(index, .success(feedPage(storePosts)))
            _ = try await load.value
            lists.append(list)
        }
        return lists
    }

    @Test func aConfirmedCreateShowsItsPlaceholderThenTheAnswerInItsPlace() async throws {
        let lists = try await loadedLists()
        let (all, latest, oldest) = (lists[0], lists[1], lists[2])
        let recorders = lists.map { $0.recordStates() }
        let create = Task { try await all.create(Post(id: "", title: "Draft"), optimistic: placeholder) }
        try await transport.waitForRequests(4)
        #expect(all.items == storePosts + [placeholder])
        #expect(latest.items == [placeholder] + storePosts)
        #expect(oldest.items == storePosts + [placeholder])
        transport.answer(3, .success(postResponse(answered)))
        #expect(try await create.value == answered)
        // The answer takes the placeholder's place in one change: never both, never neither.
        try await recorders[0].expect([
            listState(storePosts), listState(storePosts + [placeholder]), listState(storePosts + [answered]),
        ])
        try await recorders[1].expect([
            listState(storePosts), listState([placeholder] + storePosts), listState([answered] + storePosts),
        ])
        try await recorders[2].expect([
            listState(storePosts), listState(storePosts + [placeholder]), listState(storePosts + [answered]),
        ])
        extendLifetime(lists)
    }

    @Test func aFailedCreateRemovesItsPlaceholderEverywhere() async throws {
        let lists = try await loadedLists()
        let (all, latest) = (lists[0], lists[1])
        let recorders = lists.map { $0.recordStates() }
        let create = Task { try await all.create(Post(id: "", title: ""), optimistic: placeholder) }
        try await transport.waitForRequests(4)
        transport.answer(3, json: #"{"message":"title is required"}"#, status: 400)
        await #expect(throws: NetworkError.self) { try await create.value }
        try await recorders[0].expect([
            listState(storePosts), listState(storePosts + [placeholder]), listState(storePosts),
        ])
        try await recorders[1].expect([
            listState(storePosts), listState([placeholder] + storePosts), listState(storePosts),
        ])
        #expect(all.items == storePosts)
        #expect(latest.items == storePosts)
        extendLifetime(lists)
    }

    @Test func aCancelledCreateRemovesItsPlaceholder() async throws {
        let lists = try await loadedLists()
        let create = Task { try await lists[0].create(Post(id: "", title: "Draft"), optimistic: placeholder) }
        try await transport.waitForRequests(4)
        #expect(lists[1].items == [placeholder] + storePosts)
        create.cancel()
        await #expect(throws: NetworkError.self) { try await create.value }
        #expect(lists[0].items == storePosts)
        #expect(lists[1].items == storePosts)
        #expect(lists[2].items == storePosts)
    }

    @Test func twoCreatesShowInTheOrderTheyWereMade() async throws {
        let lists = try await loadedLists()
        let second = Post(id: "draft-2", title: "Second draft")
        let one = Task { try await lists[0].create(Post(id: "", title: "Draft"), optimistic: placeholder) }
        try await transport.waitForRequests(4)
        let recorders = (lists[1].recordStates(), lists[2].recordStates())
        let two = Task { try await lists[0].create(Post(id: "", title: "Second draft"), optimistic: second) }
        try await waitUntil("the second create shows") { lists[0].items.count == 5 }
        // The other lists hear of it after the list that made it shows it.
        try await recorders.0.wait(timeout: .seconds(60)) { $0.last?.items.count == 5 }
        try await recorders.1.wait(timeout: .seconds(60)) { $0.last?.items.count == 5 }
        #expect(lists[0].items == storePosts + [placeholder, second])
        #expect(lists[1].items == [second, placeholder] + storePosts)
        #expect(lists[2].items == storePosts + [placeholder, second])
        transport.answer(3, .success(postResponse(answered)))
        _ = try await one.value
        try await transport.waitForRequests(5)
        #expect(lists[0].items == storePosts + [answered, second])
        #expect(lists[1].items == [second, answered] + storePosts)
        let secondAnswered = Post(id: "100", title: "Second draft")
        transport.answer(4, .success(postResponse(secondAnswered)))
        _ = try await two.value
        #expect(lists[0].items == storePosts + [answered, secondAnswered])
        #expect(lists[1].items == [secondAnswered, answered] + storePosts)
        #expect(lists[2].items == storePosts + [answered, secondAnswered])
    }
}
