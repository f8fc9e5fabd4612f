public import ResourceKit

/// A type whose changes a store's ``Outbox`` keeps when the server is unreachable: what
/// ``StorePersistence/init(storage:outbox:queueWhenOffline:writeDelay:now:)`` takes, so that every launch that
/// configures the store configures its outbox too.
///
/// ```swift
/// let persistence = StorePersistence(
///     storage: try FileEntryStorage(directory: base.appendingPathComponent("entries")),
///     outbox: try FileEntryStorage(directory: base.appendingPathComponent("outbox")),
///     queueWhenOffline: [.resources(RemotePost.self), .list(RemoteFeed.self)])
/// ```
public struct OfflineQueueing: Sendable {
    let lane: @Sendable () -> any OutboxLane

    /// Keeps the updates and deletes made through the store's resources of `type` that fail because the
    /// server is unreachable, instead of failing them, and shows the changes of `type` kept by an earlier run
    /// in every holder: see ``Outbox``. Conflicts are found by the replayed request's preconditions
    /// (``ConflictDetection/preconditions``); for a server that ignores them, and a type read by its value's
    /// id, give ``resources(_:conflicts:detection:conditionalWhenOnline:)`` the version check.
    /// - Parameters:
    ///   - type: The remote type; its value and id must be `Codable`, to be kept on disk.
    ///   - conflicts: What a kept change does when the server's item moved past the value it was made on:
    ///     held for ``Outbox/resolve(_:with:)`` by default. See ``ConflictPolicy``.
    ///   - conditionalWhenOnline: Whether an update or delete sent at once (the server reachable) carries the
    ///     preconditions of the value it was made on too (`If-Match`, or `If-Unmodified-Since`): a `412` then
    ///     keeps the change in the outbox, where the replay that starts at once finds the conflict and does
    ///     what `conflicts` says; the call returns as for a kept change. `true` by default: an online change
    ///     never overwrites a change it did not see. `false` sends online changes without preconditions, so
    ///     that the last write wins.
    /// - Returns: The configuration.
    public static func resources<Remote: Readable>(
        _ type: Remote.Type, conflicts: ConflictPolicy<Remote.Value> = .hold, conditionalWhenOnline: Bool = true
    ) -> OfflineQueueing
    where Remote.Value: Identifiable & Codable, Remote.Value.ID: Codable & Sendable {
        OfflineQueueing {
            ItemOutboxLane(
                resources: Remote.self, policy: conflicts, detection: .preconditions,
                conditionalWhenOnline: conditionalWhenOnline)
        }
    }

    /// Keeps the changes made through the store's resources of `type` as
    /// ``resources(_:conflicts:conditionalWhenOnline:)`` does, and finds their conflicts as `detection` says:
    /// ``ConflictDetection/versionCheck`` reads the item by its id before each replayed update or delete, so
    /// this overload is there only for a type read by its value's id (`ReadRequest == Value.ID`); the compiler
    /// refuses another.
    /// - Parameters:
    ///   - type: The remote type; its value and id must be `Codable`, and it is read by its value's id.
    ///   - conflicts: What a conflict does: held by default. See ``ConflictPolicy``.
    ///   - detection: How a conflict is found; see ``ConflictDetection``.
    ///   - conditionalWhenOnline: Whether an update or delete sent at once is checked too (`true` by default):
    ///     with the version check, the item is read first, and a conflict keeps the change in the outbox, where
    ///     the replay that starts at once does what `conflicts` says.
    /// - Returns: The configuration.
    public static func resources<Remote: Readable>(
        _ type: Remote.Type, conflicts: ConflictPolicy<Remote.Value> = .hold, detection: ConflictDetection,
        conditionalWhenOnline: Bool = true
    ) -> OfflineQueueing
    where
        Remote.Value: Identifiable & Codable, Remote.Value.ID: Codable & Sendable,
        Remote.ReadRequest == Remote.Value.ID
    {
        OfflineQueueing {
            ItemOutboxLane(
                resources: Remote.self, policy: conflicts, detection: detection,
                conditionalWhenOnline: conditionalWhenOnline)
        }
    }

    /// Keeps the creates, the optimistic updates and the deletes made through the store's lists of `type`
    /// that fail because the server is unreachable, as ``resources(_:conflicts:conditionalWhenOnline:)`` does for resources.
    /// An update without an `optimistic` item is not kept (the list cannot tell which item it changes). A kept
    /// create shows its placeholder (`ListResource.create(_:optimistic:)`) where the lists place created items,
    /// or nowhere without one; when it lands, the lists place the server's item as they place any create.
    ///
    /// A replayed change carries the validators the store knows for the item it was made on: the item's
    /// version is the store's, not a holder's, so a resource's read of it, a change of it that landed (through
    /// a resource or a list, with the validators the server answered with) or a restored entry gives them to
    /// an edit made through any list. A list page brings none, and a push keeps the last ones known. Without
    /// any, the change carries no precondition and a change another device made meanwhile is not found: give
    /// the type that reads its items (``list(_:reading:conflicts:detection:conditionalWhenOnline:)``) to check
    /// versions instead.
    /// - Parameter type: The remote list type; its items and their ids must be `Codable`.
    /// - Returns: The configuration.
    public static func list<Remote: Listable>(_ type: Remote.Type) -> OfflineQueueing
    where Remote.Item: Codable, Remote.Item.ID: Codable {
        OfflineQueueing { ItemOutboxLane(lists: Remote.self) }
    }

    /// Keeps the changes made through the store's lists of `type` as ``list(_:)`` does, and finds conflicts
    /// for them: before each replayed update or delete, the item is read with `reading` and its version (the
    /// list type's `version(of:)`) compared with the version of the item the change was made on
    /// (``ConflictDetection/versionCheck``, the default: a list page brings no validators). A conflict
    /// does what `conflicts` says, as for a resource (see ``ConflictPolicy``).
    /// - Parameters:
    ///   - type: The remote list type; its items and their ids must be `Codable`, and its `version(of:)` must
    ///     give its items' versions.
    ///   - reading: A type that reads one item by its id.
    ///   - conflicts: What a conflict does: held by default.
    ///   - detection: How a conflict is found: ``ConflictDetection/versionCheck`` by default.
    ///   - conditionalWhenOnline: Whether an update or delete sent at once is checked too (`true` by default):
    ///     with the version check, the item is read first (one read per online change), and a conflict keeps
    ///     the change in the outbox, where the replay that starts at once does what `conflicts` says. `false`
    ///     sends online changes unchecked, so that the last write wins.
    /// - Returns: The configuration.
    public static func list<Remote: Listable, Reading: Readable>(
        _ type: Remote.Type, reading: Reading.Type, conflicts: ConflictPolicy<Remote.Item> = .hold,
        detection: ConflictDetection = .versionCheck, conditionalWhenOnline: Bool = true
    ) -> OfflineQueueing
    where
        Remote.Item: Codable, Remote.Item.ID: Codable, Reading.Value == Remote.Item,
        Reading.ReadRequest == Remote.Item.ID
    {
        OfflineQueueing {
            ItemOutboxLane(
                lists: Remote.self, reading: Reading.self, policy: conflicts, detection: detection,
                conditionalWhenOnline: conditionalWhenOnline)
        }
    }
}
