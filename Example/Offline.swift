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
    if let change = waiting.first, let outbox = store.outbox {
        let id = String(change.itemID)
        print("  \(waiting.count) change(s) kept by the last run: \(change.kind) of post \(id)")
        print("  the feed already shows it: \(feed.title(of: id))")
        try await editOnTheLaptop(id, change: change, in: session)
        await outbox.replay()
        try await resolveConflicts(in: outbox)
        let server: Post = try await session.send(RemotePost.readEndpoint(for: id))
        print(
            "  replayed: the server now has \"\(server.title)\"; \(outbox.pending.count) change(s) waiting")
    }
    try await feed.feed.refresh()
    print("  the first page from the server: \(feed.feed.items.count) posts")
    guard var edited = feed.feed.items.first else { return }
    let detail = PostDetailService(store: store, id: edited.id)
    // Read before the edit: the edit remembers the version it was made on (its `ETag`), for the replay's
    // precondition.
    edited = try await detail.post.read(edited.id)
    // The feed refreshes after the detail read: its page carries no `ETag`, yet the version the detail read stays
    // the store's, for every holder of the post, so the edit below is still made on it.
    try await feed.feed.refresh()
    print("  the detail read the post, then the feed refreshed (a page carries no ETag)")
    reachability.isReachable = false
    print("  the network goes away")
    edited.title = "Edited while offline"
    // Kept in the outbox, the edit is not an error: the call returns the value every holder shows.
    try await detail.post.update(edited, optimistic: edited)
    print(
        "  the edit was kept in the outbox (\(store.outbox?.pending.count ?? 0) waiting):"
            + " the feed shows \(feed.title(of: edited.id))")
    if store.outbox?.pending.last?.base?.entityTag != nil {
        print("  it is made on the version the detail read, though the feed refreshed since: its replay is conditional")
    }
    await persistence.flush()
    print("  quitting with \(store.outbox?.pending.count ?? 0) change(s) waiting")
}

/// Meanwhile, on another device: the same post's body is edited online, after the offline edit was made.
func editOnTheLaptop(_ id: String, change: PendingChange, in session: NetworkSession) async throws {
    guard change.base?.entityTag != nil || change.base?.lastModified != nil else {
        print(
            "  (this server sent no ETag or Last-Modified: a replay cannot tell whether someone else edited the post)")
        return
    }
    var theirs: Post = try await session.send(RemotePost.readEndpoint(for: id))
    theirs.body = "Edited on the laptop"
    let laptop = session  // another device: its own session on the same server, online
    _ = try await laptop.send(RemotePost.updateEndpoint(for: theirs), as: Post.self)
    print("  meanwhile, on the laptop, the same post's body is edited")
}

/// The conflicts the replay held: each shown as "yours / theirs", then resolved by keeping both edits.
func resolveConflicts(in outbox: Outbox) async throws {
    for conflict in outbox.held {
        guard let mine = conflict.mine(as: Post.self), let theirs = conflict.theirs(as: Post.self) else { continue }
        print("  the replay found a conflict and held it, shown as \"\(mine.title)\" until resolved:")
        print("    yours:  \"\(mine.title)\" / \"\(mine.body)\"")
        print("    theirs: \"\(theirs.title)\" / \"\(theirs.body)\"")
        // A merge by field: the title is what this device changed, the body what the laptop changed.
        let base = conflict.base(as: Post.self)
        var merged = theirs
        if mine.title != base?.title { merged.title = mine.title }
        if mine.body != base?.body { merged.body = mine.body }
        try await outbox.resolve(conflict.id, with: .use(merged))
        print("  resolved with both edits: \"\(merged.title)\" / \"\(merged.body)\"")
    }
}
