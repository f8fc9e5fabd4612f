import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Testing

/// What an object's events owe to its lock: they follow its transitions in order from every thread, and the name
/// they give it is made outside the lock.
@Suite(.timeLimit(.minutes(1))) struct ObjectEventLockTests {
    /// A list's state changes, pushed from several threads at once, reach a listener in the order of the list's
    /// transitions: each event starts from the state the one before it ended at. They are recorded under the
    /// list's lock; recorded just after it, two threads swap theirs (in every one of six runs with the record
    /// moved there, 15 to 45 times in 16,000 changes). Nothing runs between the lock and the record for a latch
    /// to hold one thread there, so the test makes many chances instead.
    @Test func anObjectsStateChangesFollowItsTransitionsFromEveryThread() async throws {
        let (store, _) = try makeStore()
        let session = store.session
        let list = store.list(RemoteFeed.self, request: "latest")
        try await list.refresh()
        let events = session.diagnostics(bufferingNewest: 100_000)
        let pushers = 4
        let rounds = 2_000
        // Each pusher adds an item of its own and takes it away again: the count moves between 3 and 7, so
        // most of two swapped changes show.
        await withTaskGroup(of: Void.self) { group in
            for pusher in 0..<pushers {
                group.addTask {
                    for round in 0..<rounds {
                        let id = "p\(pusher)-\(round)"
                        store.apply(.created(Post(id: id, title: "")), as: RemotePost.self)
                        store.apply(.deleted(id), as: RemotePost.self)
                    }
                }
            }
        }
        let changes = await eventsUntilMarker(events, session: session) { event in
            guard event.kind == .stateChanged, event.object == "ListResource<RemoteFeed> latest" else { return "" }
            return "\(event.previousStateSummary ?? "?")|\(event.stateSummary ?? "?")"
        }.filter { !$0.isEmpty }.map { $0.split(separator: "|").map(String.init) }
        #expect(changes.count == 2 * pushers * rounds)
        let breaks = zip(changes, changes.dropFirst()).filter { $0[1] != $1[0] }
        #expect(breaks.isEmpty, "\(breaks.count) changes do not start where the one before ended")
        #expect(changes.first?[0] == "available, 3 items")
        #expect(changes.last?[1] == "available, 3 items")
    }

    /// A list's events name it by its request's `description`, which is the app's code and may read the list. It
    /// is made before the list's lock is taken, so the first event (a state change, recorded under that lock)
    /// does not wait for the lock its own transition holds.
    @Test func aRequestWhoseDescriptionReadsItsListIsNamedOutsideTheListsLock() async throws {
        let (store, _) = try makeStore()
        let events = store.session.diagnostics()
        let query = SelfDescribingQuery()
        let list = ListResource<RemoteSelfDescribingFeed>(session: store.session, request: query)
        query.box.withLock { $0 = list }
        try await list.refresh()
        let changes = await eventsUntilMarker(events, session: store.session).filter { $0.hasPrefix("stateChanged") }
        #expect(
            changes == [
                "stateChanged | ListResource<RemoteSelfDescribingFeed> a list of 0 | idle, 0 items → loading, 0 items",
                "stateChanged | ListResource<RemoteSelfDescribingFeed> a list of 0 | loading, 0 items → available, 3 items",
            ])
    }
}

/// A list request whose `description` reads the list it selects.
struct SelfDescribingQuery: Sendable, CustomStringConvertible {
    let box = Locked<ListResource<RemoteSelfDescribingFeed>?>(nil)
    var description: String { "a list of \(box.withLock { $0 }?.items.count ?? -1)" }
}

struct RemoteSelfDescribingFeed: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListRequest = SelfDescribingQuery
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for query: SelfDescribingQuery) -> Endpoint { Endpoint(.get, "posts") }
}
