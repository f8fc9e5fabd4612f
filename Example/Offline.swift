import Foundation
import ResourceKit
import ResourceKitPersistence
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Offline and persistence

/// A network that can be switched off: the device in a tunnel.
final class Reachability: Sendable {
    private let reachable = Atomic(true)
    var isReachable: Bool {
        get { reachable.load(ordering: .relaxed) }
        set { reachable.store(newValue, ordering: .relaxed) }
    }
}

/// A transport that fails as an offline device does while its `Reachability` is off.
struct Switchable: HTTPTransport {
    let base: any HTTPTransport
    let reachability: Reachability
    init(_ base: any HTTPTransport, _ reachability: Reachability) {
        self.base = base
        self.reachability = reachability
    }
    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        guard reachability.isReachable else { throw .transport(code: .notConnectedToInternet, message: "offline") }
        return try await base.send(request)
    }
}

/// A device whose network can be switched off: a session on `Switchable`, with `counting` among its adapters.
nonisolated(unsafe) var offlineDevice: ((Reachability, [any RequestAdapting]) -> NetworkSession)?

func offlineAndPersistence(directory: String) async throws {
    print("\n8. Offline and persistence, in \(directory)")
    guard let offlineDevice else { return }
    let reachability = Reachability()
    let counter = RequestCounter()
    let session = offlineDevice(reachability, [counter])
    let base = URL(fileURLWithPath: directory)
    let persistence = StorePersistence(
        storage: try FileEntryStorage(directory: base.appendingPathComponent("entries")),
        outbox: try FileEntryStorage(directory: base.appendingPathComponent("outbox")),
        queueWhenOffline: [.resources(RemotePost.self)])  // part of configuring the store: never forgotten
    let store = ResourceStore(session: session, persistence: persistence)
    let feed = FeedService(store: store)
    let waiting = store.outbox?.pending ?? []
    if feed.feed.isRestored {
        print("  at launch, before any request: \(feed.feed.items.count) posts from disk (\(counter.value) requests)")
    } else {
        print("  at launch: nothing on disk yet (run again with the same --store to start from it)")
    }
    if let change = waiting.first {
        let id = String(change.itemID)
        print("  \(waiting.count) change(s) kept by the last run: \(change.kind) of post \(id)")
        print("  the feed already shows it: \(feed.title(of: id))")
        await store.outbox?.replay()
        let server: Post = try await session.send(RemotePost.readEndpoint(for: id))
        print(
            "  replayed: the server now has \"\(server.title)\"; \(store.outbox?.pending.count ?? 0) change(s) waiting")
    }
    try await feed.feed.refresh()
    print("  the first page from the server: \(feed.feed.items.count) posts")
    guard var edited = feed.feed.items.first else { return }
    let detail = PostDetailService(store: store, id: edited.id)
    reachability.isReachable = false
    print("  the network goes away")
    edited.title = "Edited while offline"
    // Kept in the outbox, the edit is not an error: the call returns the value every holder shows.
    try await detail.post.update(edited, optimistic: edited)
    print(
        "  the edit was kept in the outbox (\(store.outbox?.pending.count ?? 0) waiting):"
            + " the feed shows \(feed.title(of: edited.id))")
    await persistence.flush()
    print("  quitting with \(store.outbox?.pending.count ?? 0) change(s) waiting")
}
