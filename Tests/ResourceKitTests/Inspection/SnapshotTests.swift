import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct SnapshotTests {
    @Test func aStoreSnapshotSaysWhatIsLiveInFlightAndPending() async throws {
        let transport = ControlledTransport()
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api?token=s3cret", transport: transport, timeLimit: nil, clock: clock)
        let store = ResourceStore(session: session)
        let resources = ["41", "42", "43"].map { store.resource(RemotePost.self, id: $0) }
        let lists = ["a", "b"].map { store.list(RemoteFeed.self, request: $0) }
        let observer = Task { for await _ in resources[2].states {} }
        try await waitUntil("an observer") { resources[2].observerCount == 1 }

        let readers = (0..<5).map { _ in Task { try await resources[0].read("41") } }
        try await waitUntil("5 callers") { resources[0].waitingCallerCount == 5 }
        try await transport.waitForRequests(1)
        clock.advance(by: .seconds(2))
        let edited = Post(id: "42", title: "Edited")
        let update = Task { try await resources[1].update(edited, optimistic: edited) }
        try await transport.waitForRequests(2)
        clock.advance(by: .seconds(1))

        let snapshot = store.snapshot()
        func object(
            _ label: String, _ state: String, observers: Int = 0, callers: Int = 0, operations: Int = 0,
            pending: Int = 0
        ) -> ObjectSnapshot {
            ObjectSnapshot(
                label: label, state: state, observers: observers, waitingCallers: callers,
                operationsInFlight: operations, age: nil, pendingOptimisticChanges: pending)
        }
        #expect(
            snapshot.resources == [
                object("Resource<RemotePost> posts/41", "loading", callers: 5, operations: 1),
                object("Resource<RemotePost> posts/42", "loading", callers: 1, operations: 1, pending: 1),
                object("Resource<RemotePost> posts/43", "idle", observers: 1),
            ])
        // Every holder of the item's type keeps the pending change, to show it if a page brings the item.
        #expect(
            snapshot.lists == [
                object("ListResource<RemoteFeed> a", "idle, 0 items", pending: 1),
                object("ListResource<RemoteFeed> b", "idle, 0 items", pending: 1),
            ])
        #expect(snapshot.remembered == [])
        #expect(
            snapshot.session.requests.map { [$0.method, $0.url, "\($0.elapsed)", "\($0.attempt)", "\($0.callers)"] }
                == [
                    ["GET", "http://test.local/api/posts/41?token=redacted", "3.0 seconds", "1", "5"],
                    ["PATCH", "http://test.local/api/posts/42?token=redacted", "1.0 seconds", "1", "1"],
                ])
        #expect(session.snapshot().requests.map(\.callers) == [1, 1])

        let data = try JSONEncoder().encode(snapshot)
        #expect(!String(decoding: data, as: UTF8.self).contains("s3cret"))
        #expect(try JSONDecoder().decode(StoreSnapshot.self, from: data) == snapshot)

        transport.answer(0, .success(postResponse(Post(id: "41", title: "Forty-one"))))
        transport.answer(1, .success(postResponse(edited)))
        for reader in readers { _ = try await reader.value }
        _ = try await update.value
        clock.advance(by: .seconds(4))
        let after = store.snapshot()
        #expect(after.session.requests.isEmpty)
        #expect(after.resources.map(\.state) == ["available", "available", "idle"])
        #expect(after.resources.map(\.age) == [.seconds(4), .seconds(4), nil])
        #expect(after.resources.map(\.pendingOptimisticChanges) == [0, 0, 0])
        #expect(after.lists.map(\.pendingOptimisticChanges) == [0, 0])
        observer.cancel()
        // The lists must live to here: in a release build a last use earlier lets them go at once.
        withExtendedLifetime(lists) {}
    }

    @Test func aFreedResourceIsRememberedWithItsAge() async throws {
        let clock = ManualClock()
        let (store, _) = try makeStore(clock: clock)
        do {
            let resource = store.resource(RemotePost.self, id: "42")
            _ = try await resource.read("42")
        }
        clock.advance(by: .seconds(7))
        let snapshot = store.snapshot()
        #expect(snapshot.resources.isEmpty)
        #expect(snapshot.remembered == [RememberedSnapshot(itemType: "Post", id: "42", age: .seconds(7), cost: 1)])
    }
}
