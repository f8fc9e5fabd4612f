import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Promises of the LiveData and ObservingState articles at their edges: pushes that meet pages in flight,
/// failures and optimistic changes, and what a store reports of what it holds.
@Suite(.timeLimit(.minutes(1))) struct LivePromiseTests {
    let transport = ControlledTransport()
    let store: ResourceStore

    init() {
        store = ResourceStore(session: makeTimelessSession(transport))
    }

    /// Loads `list`'s first page from `posts`, answering its request (number `index`).
    func load(_ list: ListResource<RemoteFeed>, index: Int, _ posts: [Post] = storePosts) async throws {
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(index + 1)
        transport.answer(index, .success(feedPage(posts)))
        _ = try await load.value
    }

    /// A created item pushed while a refresh is in flight goes where each list's placement says when the older
    /// page lands: at the start, at the end, or nowhere.
    @Test func aCreationPushedDuringARefreshKeepsItsPlacement() async throws {
        let latest = store.list(RemoteFeed.self, request: "latest")
        let oldest = store.list(RemoteFeed.self, request: "oldest")
        let other = store.list(RemoteFeed.self, request: "other")
        for (index, list) in [latest, oldest, other].enumerated() { try await load(list, index: index) }
        var refreshes: [Task<Void, any Error>] = []
        for (index, list) in [latest, oldest, other].enumerated() {
            refreshes.append(Task { try await list.refresh() })
            try await transport.waitForRequests(4 + index)
        }
        let made = Post(id: "44", title: "New")
        store.apply(.created(made), as: RemotePost.self)
        #expect(latest.items.map(\.id) == ["44", "41", "42", "43"])
        #expect(oldest.items.map(\.id) == ["41", "42", "43", "44"])
        #expect(other.items.map(\.id) == ["41", "42", "43"])
        // The pages were asked before the creation: they do not hold it.
        for index in 3..<6 { transport.answer(index, .success(feedPage(storePosts))) }
        for refresh in refreshes { try await refresh.value }
        #expect(latest.items.map(\.id) == ["44", "41", "42", "43"])
        #expect(oldest.items.map(\.id) == ["41", "42", "43", "44"])
        #expect(other.items.map(\.id) == ["41", "42", "43"])
    }

    /// The same for a list whose first load is in flight: it shows the item only where it places it.
    @Test func aCreationPushedDuringAFirstLoadKeepsItsPlacement() async throws {
        let latest = store.list(RemoteFeed.self, request: "latest")
        let other = store.list(RemoteFeed.self, request: "other")
        let loads = [Task { try await latest.loadFirstPage() }]
        try await transport.waitForRequests(1)
        let otherLoad = Task { try await other.loadFirstPage() }
        try await transport.waitForRequests(2)
        store.apply(.created(Post(id: "44", title: "New")), as: RemotePost.self)
        transport.answer(0, .success(feedPage(storePosts)))
        transport.answer(1, .success(feedPage(storePosts)))
        for load in loads { _ = try await load.value }
        _ = try await otherLoad.value
        #expect(latest.items.map(\.id) == ["44", "41", "42", "43"])
        #expect(other.items.map(\.id) == ["41", "42", "43"])
    }

    /// A resource whose last read failed still shows the value the failure keeps: a pushed value older than
    /// it is not applied, a newer one is.
    @Test func aPushOlderThanAFailuresKeptValueIsNotApplied() async throws {
        let post = store.resource(RemoteRevisedPost.self, id: "7")
        var read = Task { try await post.read("7") }
        try await transport.waitForRequests(1)
        let five = RevisedPost(id: "7", title: "five", revision: 5)
        transport.answer(0, .success(HTTPResponse(statusCode: 200, body: try JSONEncoder().encode(five))))
        _ = try await read.value
        read = Task { try await post.read("7") }
        try await transport.waitForRequests(2)
        transport.answer(1, json: "{}", status: 500)
        await #expect(throws: NetworkError.self) { try await read.value }
        guard case .failure(let error, let previous) = post.state else {
            Issue.record("not a failure: \(post.state)")
            return
        }
        #expect(previous == five)
        store.apply(.updated(RevisedPost(id: "7", title: "three", revision: 3)), as: RemoteRevisedPost.self)
        #expect(post.state == .failure(error, previous: five))
        let six = RevisedPost(id: "7", title: "six", revision: 6)
        store.apply(.updated(six), as: RemoteRevisedPost.self)
        #expect(post.state == .available(six))
    }

    /// A deletion pushed under a list's optimistic update stays hidden until the update ends; its rollback
    /// lands on the deletion.
    @Test func aDeletionPushedUnderAnOptimisticUpdateWaitsForItsRollback() async throws {
        let list = store.list(RemoteFeed.self, request: "all")
        try await load(list, index: 0)
        let detail = store.resource(RemotePost.self, id: "42")
        let states = list.recordStates()
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(2)
        store.apply(.deleted("42"), as: RemotePost.self)
        #expect(list.items == [storePosts[0], optimistic, storePosts[2]])
        // The push is newer than the update's request, asked before it: nothing newer is loading.
        #expect(detail.state == .available(optimistic))
        transport.answer(1, json: "{}", status: 404)
        await #expect(throws: NetworkError.self) { try await update.value }
        #expect(list.items == [storePosts[0], storePosts[2]])
        #expect(detail.state.value == nil)
        try await states.waitForCount(3, timeout: .seconds(30))
        #expect(
            states.states.map(\.items) == [
                storePosts, [storePosts[0], optimistic, storePosts[2]], [storePosts[0], storePosts[2]],
            ])
        // The store no longer names the list as a holder of the item: a new resource starts empty.
        #expect(store.resource(RemotePostPreview.self, id: "42").state == .idle)
    }

    /// A confirmed update after the pushed deletion keeps the item, as the server's newer answer.
    @Test func aDeletionPushedUnderAConfirmedUpdateGivesWayToItsAnswer() async throws {
        let list = store.list(RemoteFeed.self, request: "all")
        try await load(list, index: 0)
        let detail = store.resource(RemotePost.self, id: "42")
        let optimistic = Post(id: "42", title: "Edited")
        let update = Task { try await detail.update(optimistic, optimistic: optimistic) }
        try await transport.waitForRequests(2)
        store.apply(.deleted("42"), as: RemotePost.self)
        let answered = Post(id: "42", title: "Edited", body: "stored")
        transport.answer(1, .success(postResponse(answered)))
        #expect(try await update.value == answered)
        #expect(list.items == [storePosts[0], answered, storePosts[2]])
        #expect(detail.state == .available(answered))
    }

    /// `age` is `nil` once no value is shown: after a delete, and after a pushed deletion.
    @Test func noAgeWithoutAValue() async throws {
        let clock = ManualClock()
        let (store, _) = try makeStore(clock: clock)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        clock.advance(by: .seconds(3))
        #expect(post.age == .seconds(3))
        store.apply(.deleted("42"), as: RemotePost.self)
        #expect(post.state == .idle)
        #expect(post.age == nil)
        let other = store.resource(RemotePost.self, id: "41")
        try await other.read("41")
        try await other.delete(storePosts[0])
        #expect(other.state == .idle)
        #expect(other.age == nil)
        #expect(store.snapshot().resources.allSatisfy { $0.age == nil })
    }

    /// A list's age in a store's snapshot is its first page's, whatever its type says of its items.
    @Test func aListsSnapshotTellsItsAge() async throws {
        let clock = ManualClock()
        let (store, _) = try makeStore(clock: clock)
        let feed = store.list(RemoteFeed.self, request: "all")
        #expect(store.snapshot().lists.map(\.age) == [nil])
        try await feed.refresh()
        clock.advance(by: .seconds(4))
        #expect(store.snapshot().lists.map(\.age) == [.seconds(4)])
        try await feed.loadNextPage()
        #expect(store.snapshot().lists.map(\.age) == [.seconds(4)])
        try await feed.refresh()
        #expect(store.snapshot().lists.map(\.age) == [.zero])
        // The feed's items are not whole values: a resource made from one still starts stale.
        #expect(store.resource(RemotePost.self, id: "42").age == nil)
    }

    /// A wipe tells a live source that what it follows changed: the holders made before it are no longer live.
    @Test func aWipeTellsMembershipWatchers() async throws {
        let (store, _) = try makeStore()
        var changes = store.membershipChanges().makeAsyncIterator()
        let post = store.resource(RemotePost.self, id: "42")
        #expect(await changes.next() != nil)
        #expect(store.liveHolders(of: RemotePost.self).ids == ["42"])
        try await store.wipe()
        #expect(await changes.next() != nil)
        #expect(store.liveHolders(of: RemotePost.self).isEmpty)
        withExtendedLifetime(post) {}
    }
}
