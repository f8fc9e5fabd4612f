// swift-format-ignore-file
// Code blocks of ResourceKit.docc/LiveData.md that no Snippet file holds, verbatim; ReadmeTests checks them.
// Not formatted: the block that needs Apple's Network framework stands unindented inside `#if`, as the
// article shows it.
import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase

// platforms: the article's NWPathMonitor example needs Apple's Network framework, which only Apple platforms have.
#if canImport(Network)
import Network

/// Yields whenever the network is usable: after it comes back, and once at the start.
func networkUsable() -> AsyncStream<Void> {
    AsyncStream { continuation in
        let monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { path in
            if path.status == .satisfied { continuation.yield() }
        }
        monitor.start(queue: DispatchQueue(label: "network-usable"))
        continuation.onTermination = { _ in monitor.cancel() }
    }
}

func revalidateWhenTheNetworkReturns(store: ResourceStore) -> Task<Void, Never> {
    Task { await store.revalidateObserved(whenever: networkUsable()) }
}
#endif

func followTheScores(session: NetworkSession, show: @escaping @Sendable (String) -> Void) async throws {
    let events = session.events(Endpoint(.get, "scores/live"), onStatus: { status in
        switch status.kind {
        case .opened: show("live")
        case .reconnecting: show("reconnecting in \(status.delay ?? .zero)")
        case .finished where status.error != nil: show("offline")
        default: break
        }
    })
    for try await event in events { print(event.data) }
}

func goLive(store: ResourceStore, api: NetworkSession, show: @escaping @Sendable (String) -> Void) -> Task<Void, any Error> {
    let realtime = PocketBaseRealtime(session: api, onStatus: { status in
        switch status.kind {
        case .opened: show("live")
        case .reconnecting: show("reconnecting in \(status.delay ?? .zero)")
        case .finished: show("offline")
        default: break
        }
    })
    .following(RemotePost.self, collection: "posts")
    return Task { try await realtime.run(in: store) }
}
