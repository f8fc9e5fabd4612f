/// A source of changes the server pushes, which it hands to a store: PocketBase realtime
/// (`PocketBaseRealtime`, in `ResourceKitPocketBase`), any server-sent event feed (`session.events(_:)`, in `ResourceKitEventStream`),
/// a WebSocket.
///
/// A source runs in a task of yours and stops when that task is cancelled:
///
/// ```swift
/// let live = Task { try await realtime.run(in: store) }
/// // …
/// live.cancel()
/// ```
///
/// What a source does, to keep the store's promises:
/// - hands each change to ``ResourceStore/apply(_:as:)``, which orders it against local answers;
/// - follows what the store holds (``ResourceStore/liveHolders(of:)``, with ``ResourceStore/membershipChanges()``
///   to learn when that changes), so that the server sends nothing nobody shows;
/// - after a gap (a lost connection), when the server does not replay what was missed, revalidates what is
///   observed, once: ``ResourceStore/invalidate(_:)``.
public protocol LiveSource: Sendable {
    /// Runs the source, handing the server's changes to `store`, until the calling task is cancelled or the
    /// source cannot go on.
    /// - Parameter store: The store whose holders show the changes.
    /// - Throws: ``NetworkError`` when the source stops for good: ``NetworkError/cancelled`` once cancelled.
    func run(in store: ResourceStore) async throws(NetworkError)
}
