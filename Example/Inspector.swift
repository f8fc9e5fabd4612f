import Foundation
import ResourceKit

/// `--inspect`: the library's live picture between the example's steps — the store's objects and their
/// states, the session's requests in flight, and the events since the last picture.
final class Inspector: Sendable {
    private let events = Locked<[DiagnosticEvent]>([])
    private let listener: Task<Void, Never>
    let session: NetworkSession

    init(session: NetworkSession) {
        self.session = session
        let stream = session.diagnostics()
        let events = events
        listener = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }

    deinit { listener.cancel() }

    /// Prints the picture: the store's objects (when given), the requests in flight, the last events.
    func picture(_ title: String, store: ResourceStore? = nil) async {
        // The listener runs on its own task: give it the events emitted so far.
        for _ in 0..<100 { await Task.yield() }
        print("  ┌ inspector: \(title)")
        if let store {
            let snapshot = store.snapshot()
            for object in snapshot.resources + snapshot.lists {
                var line = "  │ \(object.label): \(object.state)"
                if object.observers > 0 { line += ", \(object.observers) observers" }
                if object.waitingCallers > 0 { line += ", \(object.waitingCallers) callers waiting" }
                if object.pendingOptimisticChanges > 0 { line += ", \(object.pendingOptimisticChanges) optimistic" }
                if let age = object.age { line += ", loaded \(age) ago" }
                print(line)
            }
            if !snapshot.remembered.isEmpty { print("  │ remembered: \(snapshot.remembered.count) values") }
        }
        let requests = (store?.snapshot().session ?? session.snapshot()).requests
        print("  │ requests in flight: \(requests.isEmpty ? "none" : "")")
        for request in requests {
            print("  │   \(request.method) \(request.url), attempt \(request.attempt), \(request.callers) callers")
        }
        let recent = events.withLock { events in
            defer { events.removeAll() }
            return events
        }
        let shown = recent.suffix(6)
        print("  │ last events (\(recent.count) since the previous picture):")
        for event in shown { print("  │   \(event)") }
        print("  └ activity: \(session.activity.status)")
    }
}
