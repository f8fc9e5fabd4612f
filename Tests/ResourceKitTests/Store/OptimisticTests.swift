import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Optimistic updates and deletes: shown at once everywhere, confirmed by the server's answer or rolled back.
@Suite(.timeLimit(.minutes(1))) struct OptimisticTests {
    let transport = ControlledTransport()
    let store: ResourceStore
    let original = storePosts[1]
    let loaded = PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3)

    init() {
        store = ResourceStore(session: makeTimelessSession(transport))
    }

    func listState(_ posts: [Post]) -> ListState<Post> { ListState(content: .available(posts), pagination: loaded) }

    func posts(with post: Post) -> [Post] { [storePosts[0], post, storePosts[2]] }

    /// Two optimistic updates of post 42: the first in flight (request 1), the second queued behind it.
    func twoOverlappingUpdates(
        of detail: Resource<RemotePost>
    ) async throws -> (first: Post, second: Post, one: Task<Post, any Error>, two: Task<Post, any Error>) {
        let first = Post(id: "42", title: "First")
        let second = Post(id: "42", title: "Second")
        let one = Task { try await detail.update(first, optimistic: first) }
        try await transport.waitForRequests(2)
        let two = Task { try await detail.update(second, optimistic: second) }
        try await waitUntil("the second update is queued") { detail.waitingCallerCount == 2 }
        return (first, second, one, two)
    }

    /// A detail, a preview of the same post and a list, all loaded.
    func loadedHolders() async throws -> (Resource<RemotePost>, Resource<RemotePostPreview>, ListResource<RemoteFeed>) {
        let list = store.list(RemoteFeed.self, request: "all")
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(feedPage(storePosts)))
        _ = try await load.value
        let detail = store.resource(RemotePost.self, id: "42")
        let preview = store.resource(RemotePostPreview.self, id: "42")
        #expect(detail.state == .available(original))
        #expect(preview.state == .available(original))
        return (detail, preview, list)
    }

    @Test func aConfirmedUpdateShowsAtOnceThenTheServersAnswer() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let recorders = (detail.recordStates(), preview.recordStates(), list.recordStates())
        let optimistic = Post(id: "42", title: "Edited")
        let answered = Post(id: "42", title: "Edited", body: "as the server stored it")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(2)
        #expect(detail.state == .loading(previous: optimistic))
        #expect(preview.state == .available(optimistic))
        #expect(list.items == posts(with: optimistic))
        transport.answer(1, .success(postResponse(answered)))
        #expect(try await update.value == answered)
        #expect(
            try await recorders.0.waitForCount(3) == [
                .available(original), .loading(previous: optimistic), .available(answered),
            ])
        #expect(
            try await recorders.1.waitForCount(3) == [
                .available(original), .available(optimistic), .available(answered),
            ])
        #expect(
            try await recorders.2.waitForCount(3) == [
                listState(storePosts), listState(posts(with: optimistic)), listState(posts(with: answered)),
            ])
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((detail, preview, list))
    }

    @Test func aFailedUpdateRollsBackExactlyEverywhere() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let recorders = (detail.recordStates(), preview.recordStates(), list.recordStates())
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(2)
        transport.answer(1, json: "{}", status: 500)
        let error = NetworkError.httpStatus(code: 500, body: Data("{}".utf8))
        await #expect(throws: error) { try await update.value }
        // Only the resource that asked shows the failure; the others are exactly as before.
        #expect(
            try await recorders.0.waitForCount(3) == [
                .available(original), .loading(previous: optimistic), .failure(error, previous: original),
            ])
        #expect(
            try await recorders.1.waitForCount(3) == [
                .available(original), .available(optimistic), .available(original),
            ])
        #expect(
            try await recorders.2.waitForCount(3) == [
                listState(storePosts), listState(posts(with: optimistic)), listState(storePosts),
            ])
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((detail, preview, list))
    }

    @Test func overlappingUpdatesWhereTheFirstFailsKeepTheSecond() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let recorders = (detail.recordStates(), preview.recordStates(), list.recordStates())
        let (first, second, one, two) = try await twoOverlappingUpdates(of: detail)
        // The other holders hear of the second update after the resource that made it queues it.
        let withSecond = posts(with: second)
        try await recorders.1.wait(timeout: .seconds(60)) { $0.last == .available(second) }
        try await recorders.2.wait(timeout: .seconds(60)) { $0.last?.items == withSecond }
        #expect(list.items == withSecond)
        transport.answer(1, json: "{}", status: 500)
        await #expect(throws: NetworkError.self) { try await one.value }
        // The first is rolled back under the second, which still shows.
        #expect(detail.state == .loading(previous: second))
        #expect(preview.state == .available(second))
        #expect(list.items == posts(with: second))
        try await transport.waitForRequests(3)
        transport.answer(2, .success(postResponse(second)))
        #expect(try await two.value == second)
        #expect(
            try await recorders.0.waitForCount(4) == [
                .available(original), .loading(previous: first), .loading(previous: second), .available(second),
            ])
        #expect(
            try await recorders.1.waitForCount(4) == [
                .available(original), .available(first), .available(second), .available(second),
            ])
        #expect(
            try await recorders.2.waitForCount(4) == [
                listState(storePosts), listState(posts(with: first)), listState(posts(with: second)),
                listState(posts(with: second)),
            ])
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((detail, preview, list))
    }

    @Test func overlappingUpdatesWhereTheSecondFailsFallBackToTheFirstAnswer() async throws {
        let (detail, _, list) = try await loadedHolders()
        let (first, second, one, two) = try await twoOverlappingUpdates(of: detail)
        transport.answer(1, .success(postResponse(first)))
        _ = try await one.value
        #expect(list.items == posts(with: second))
        try await transport.waitForRequests(3)
        transport.answer(2, json: "{}", status: 500)
        await #expect(throws: NetworkError.self) { try await two.value }
        #expect(list.items == posts(with: first))
        #expect(detail.state.value == first)
    }

    @Test func aCancelledOptimisticUpdateRollsBack() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(2)
        update.cancel()
        await #expect(throws: NetworkError.cancelled) { try await update.value }
        #expect(detail.state == .available(original))
        #expect(preview.state == .available(original))
        #expect(list.items == storePosts)
    }

    @Test func aCancelledOptimisticUpdateRollsBackAtOnceWhileItsRequestRunsOn() async throws {
        // This server ignores cancellation: the request stays in flight after its caller left.
        let server = HeldServer()
        let store = ResourceStore(session: makeTimelessSession(server))
        let detail = store.resource(RemotePost.self, id: "42")
        let feed = store.list(RemoteFeed.self, request: "all")
        let load = Task { try await feed.loadFirstPage() }
        try await waitUntil("the page is asked") { server.heldCount == 1 }
        server.release(0)
        _ = try await load.value
        let before = feed.listState
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await waitUntil("the update is sent") { server.heldCount == 1 }
        #expect(feed.items[1] == optimistic)
        update.cancel()
        await #expect(throws: NetworkError.cancelled) { try await update.value }
        #expect(server.heldCount == 1)
        #expect(detail.state == .available(HeldServer.post(version: 0)))
        #expect(feed.listState == before)
        server.release(0)
    }

    @Test func anOptimisticDeleteHidesTheItemAndAFailureBringsItBack() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let delete = Task { try await detail.delete(original, optimistic: true) }
        try await transport.waitForRequests(2)
        #expect(detail.state == .loading(previous: nil))
        #expect(preview.state == .idle)
        #expect(list.items == [storePosts[0], storePosts[2]])
        transport.answer(1, json: "{}", status: 404)
        await #expect(throws: NetworkError.self) { try await delete.value }
        #expect(preview.state == .available(original))
        #expect(list.items == storePosts)
        let again = Task { try await detail.delete(original, optimistic: true) }
        try await transport.waitForRequests(3)
        transport.answer(2, .success(HTTPResponse(statusCode: 204)))
        #expect(try await again.value == nil)
        #expect(detail.state == .idle)
        #expect(preview.state == .idle)
        #expect(list.items == [storePosts[0], storePosts[2]])
    }

    @Test func anOptimisticUpdateThroughAListRollsBackInTheOtherHolders() async throws {
        let (detail, _, list) = try await loadedHolders()
        let other = store.list(RemoteFeed.self, request: "other")
        let load = Task { try await other.loadFirstPage() }
        try await transport.waitForRequests(2)
        transport.answer(1, .success(feedPage(storePosts)))
        _ = try await load.value
        let recorders = (detail.recordStates(), list.recordStates(), other.recordStates())
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await list.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(3)
        #expect(list.items == posts(with: optimistic))
        #expect(other.items == posts(with: optimistic))
        #expect(detail.state == .available(optimistic))
        transport.answer(2, json: "{}", status: 409)
        await #expect(throws: NetworkError.self) { try await update.value }
        #expect(
            try await recorders.0.waitForCount(3) == [
                .available(original), .available(optimistic), .available(original),
            ])
        let expected = [listState(storePosts), listState(posts(with: optimistic)), listState(storePosts)]
        #expect(try await recorders.1.waitForCount(3) == expected)
        #expect(try await recorders.2.waitForCount(3) == expected)
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((detail, list, other))
    }

    @Test func anOptimisticDeleteThroughAListIsConfirmed() async throws {
        let (detail, _, list) = try await loadedHolders()
        let delete = Task { try await list.delete(original, optimistic: true) }
        try await transport.waitForRequests(2)
        #expect(list.items == [storePosts[0], storePosts[2]])
        #expect(detail.state == .idle)
        transport.answer(1, .success(HTTPResponse(statusCode: 204)))
        try await delete.value
        #expect(list.items == [storePosts[0], storePosts[2]])
        #expect(detail.state == .idle)
        #expect(list.listState.content == .available([storePosts[0], storePosts[2]]))
    }

    static let refused = NetworkError.httpStatus(code: 400, body: Data("{}".utf8))
    static let newer = Post(id: "42", title: "Newer")

    /// An optimistic update of post 42 through `detail`, sent while request 1 is in flight and refused (400)
    /// before request 1 answers.
    func refuseAnUpdate(through detail: Resource<RemotePost>) async throws -> Post {
        try await transport.waitForRequests(2)
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(3)
        transport.answer(2, json: "{}", status: 400)
        await #expect(throws: Self.refused) { try await update.value }
        return optimistic
    }

    /// A refused change changes nothing on the server: news that arrives after the refusal, from a page sent
    /// before it, is what the asker would show without the change, so it becomes the failure's `previous`.
    @Test func aRefusedUpdateFallsBackToNewsThatCrossedIt() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let recorder = detail.recordStates()
        let refresh = Task { try await list.refresh() }
        let optimistic = try await refuseAnUpdate(through: detail)
        transport.answer(1, .success(feedPage(posts(with: Self.newer))))
        _ = try await refresh.value
        #expect(list.items == posts(with: Self.newer))
        #expect(preview.state == .available(Self.newer))
        #expect(
            try await recorder.waitForCount(4) == [
                .available(original), .loading(previous: optimistic), .failure(Self.refused, previous: original),
                .failure(Self.refused, previous: Self.newer),
            ])
        extendLifetime((detail, preview, list))
    }

    /// The same for the asker's own read, sent before the refused change and answered after it.
    @Test func aRefusedUpdateFallsBackToItsOwnReadThatCrossedIt() async throws {
        let (detail, preview, list) = try await loadedHolders()
        let recorder = detail.recordStates()
        let read = Task { try await detail.read("42") }
        let optimistic = try await refuseAnUpdate(through: detail)
        transport.answer(1, .success(postResponse(Self.newer)))
        #expect(try await read.value == Self.newer)
        #expect(preview.state == .available(Self.newer))
        #expect(list.items == posts(with: Self.newer))
        #expect(
            try await recorder.waitForCount(5) == [
                .available(original), .loading(previous: original), .loading(previous: optimistic),
                .failure(Self.refused, previous: original), .failure(Self.refused, previous: Self.newer),
            ])
        extendLifetime((detail, preview, list))
    }
}
