import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase
import ResourceKitTesting
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Live data

/// Counts the requests of a session.
final class RequestCounter: RequestAdapting, Sendable {
    private let count = Atomic(0)
    var value: Int { count.load(ordering: .relaxed) }
    func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        count.add(1, ordering: .relaxed)
        return request
    }
}

func liveData(_ session: NetworkSession, first: Post) async throws {
    print("\n7. Live data: another device edits a post")
    guard let secondDevice else { return }
    let counter = RequestCounter()
    let (deviceB, realtimeB) = secondDevice([counter])
    let store = ResourceStore(session: deviceB)
    let feed = FeedService(store: store)
    try await feed.feed.loadFirstPage()
    let states = feed.feed.recordStates()
    let (opened, open) = AsyncStream.makeStream(of: Int.self)
    let realtime = PocketBaseRealtime(session: realtimeB, onOpen: { open.yield($0) })
        .following(RemotePost.self, collection: "posts")
    let live = Task { try await realtime.run(in: store) }
    defer { live.cancel() }
    var openings = opened.makeAsyncIterator()
    _ = await openings.next()
    let before = counter.value
    print("  device B shows \(feed.title(of: first.id)) and listens to PocketBase's realtime events")
    var edited = first
    edited.title = "Edited on device A"
    let _: Post = try await session.send(RemotePost.updateEndpoint(for: edited))
    print("  device A renamed the post")
    let title = edited.title
    try await states.wait(timeout: .seconds(10)) { $0.last?.items.first { $0.id == first.id }?.title == title }
    print("  device B's feed shows \(feed.title(of: first.id)), after \(counter.value - before) requests of its own")
}
