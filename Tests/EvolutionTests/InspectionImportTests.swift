import Foundation
import ResourceKitInspection
import Testing

/// A file that imports ResourceKitInspection alone, as devtools code written when the event feed, the activity
/// indicator and the snapshots lived there did: they now live in the HTTP layer and in ResourceKit, which the
/// module re-exports, so the file compiles unchanged.
@Suite struct InspectionImportTests {
    func shown(_ status: NetworkActivity.Status) -> String { status.isBusy ? "busy" : "idle" }

    @Test func theFeedAndTheIndicatorComeWithTheModule() {
        let session = NetworkSession(baseURL: "http://127.0.0.1:1/api")
        let activity: NetworkActivity = session.activity
        #expect(shown(activity.status) == "idle")
        #expect(activity.requestsInFlight == 0)
        let events: DiagnosticEvents = session.diagnostics(bufferingNewest: 10)
        _ = events
        #expect(session.snapshot().requests.isEmpty)
    }

    @Test func aStoresSnapshotComesWithTheModule() throws {
        let store = ResourceStore(session: NetworkSession(baseURL: "http://127.0.0.1:1/api"))
        let snapshot: StoreSnapshot = store.snapshot()
        #expect(
            snapshot == StoreSnapshot(resources: [], lists: [], remembered: [], session: SessionSnapshot(requests: [])))
        let decoded = try JSONDecoder().decode(StoreSnapshot.self, from: JSONEncoder().encode(snapshot))
        #expect(decoded == snapshot)
    }
}
