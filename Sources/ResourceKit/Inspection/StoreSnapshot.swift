import Foundation

/// A picture of a store at one moment: its live resources and lists, what it remembers of freed ones, and
/// its session's calls in flight. ``ResourceStore/snapshot()`` takes it.
public struct StoreSnapshot: Sendable, Equatable, Codable {
    /// Live resources, sorted by ``ObjectSnapshot/label``.
    public var resources: [ObjectSnapshot]
    /// Live lists, sorted by ``ObjectSnapshot/label``.
    public var lists: [ObjectSnapshot]
    /// Values the store remembers of resources nobody holds, most recently used first.
    public var remembered: [RememberedSnapshot]
    /// The session's calls in flight, with how many callers of the store's objects share each.
    public var session: SessionSnapshot

    /// Creates a store snapshot.
    /// - Parameters:
    ///   - resources: Live resources.
    ///   - lists: Live lists.
    ///   - remembered: Remembered values.
    ///   - session: The session's calls in flight.
    public init(
        resources: [ObjectSnapshot], lists: [ObjectSnapshot], remembered: [RememberedSnapshot],
        session: SessionSnapshot
    ) {
        self.resources = resources
        self.lists = lists
        self.remembered = remembered
        self.session = session
    }
}

/// One live resource or list of a store.
public struct ObjectSnapshot: Sendable, Equatable, Codable {
    /// As diagnostics name it: `Resource<RemotePost> posts/42`, `ListResource<RemoteFeed>`.
    public var label: String
    /// The state's case (and a list's item count), never its value: `available`, `failure(timeout)`.
    public var state: String
    /// Registered `states` streams.
    public var observers: Int
    /// Callers waiting for its operations in flight.
    public var waitingCallers: Int
    /// Its operations in flight (reads, pages, writes, queued writes).
    public var operationsInFlight: Int
    /// How long ago its value was loaded, on the session's clock (a list's: its first page, which a refresh
    /// replaces); `nil` with no value, or stale (invalidated), and for a list restored from persistence until
    /// its first page arrives (its `restoredAge` tells the restored items' age).
    public var age: Duration?
    /// Optimistic changes shown and not yet confirmed or rolled back.
    public var pendingOptimisticChanges: Int

    /// Creates an object snapshot.
    /// - Parameters:
    ///   - label: The object's name.
    ///   - state: The state's case.
    ///   - observers: Registered streams.
    ///   - waitingCallers: Waiting callers.
    ///   - operationsInFlight: Operations in flight.
    ///   - age: Its value's age.
    ///   - pendingOptimisticChanges: Optimistic changes pending.
    public init(
        label: String, state: String, observers: Int, waitingCallers: Int, operationsInFlight: Int, age: Duration?,
        pendingOptimisticChanges: Int
    ) {
        self.label = label
        self.state = state
        self.observers = observers
        self.waitingCallers = waitingCallers
        self.operationsInFlight = operationsInFlight
        self.age = age
        self.pendingOptimisticChanges = pendingOptimisticChanges
    }
}

/// A value a store remembers of a resource nobody holds.
public struct RememberedSnapshot: Sendable, Equatable, Codable {
    /// The item's value type.
    public var itemType: String
    /// The item's id.
    public var id: String
    /// How long ago it was loaded; `nil` when stale.
    public var age: Duration?
    /// What it counts against the store's capacity.
    public var cost: Int

    /// Creates a remembered-value snapshot.
    /// - Parameters:
    ///   - itemType: The value type.
    ///   - id: The id.
    ///   - age: Its age.
    ///   - cost: Its cost.
    public init(itemType: String, id: String, age: Duration?, cost: Int) {
        self.itemType = itemType
        self.id = id
        self.age = age
        self.cost = cost
    }
}

extension ResourceStore {
    /// What the store holds now: every live resource and list (state, observers, waiting callers, age,
    /// optimistic changes pending), the values it remembers, and its session's calls in flight with how many
    /// callers share each. Cheap: one pass under the store's lock and each object's; `Codable`.
    /// - Returns: The snapshot.
    public func snapshot() -> StoreSnapshot {
        let now = session.now
        let holders = inspectHolders()
        var callers: [Int: Int] = [:]
        func snapshots(_ objects: [ObjectInspection]) -> [ObjectSnapshot] {
            objects.map { object in
                let machine = object.machine
                for (task, count) in machine.tasks { callers[task] = count }
                return ObjectSnapshot(
                    label: object.label, state: object.state, observers: object.observers,
                    waitingCallers: machine.waitingCallers, operationsInFlight: machine.operationsInFlight,
                    age: machine.loadedAt.map { now - $0 }, pendingOptimisticChanges: machine.pendingOptimisticChanges)
            }.sorted { $0.label < $1.label }
        }
        let resources = snapshots(holders.resources)
        let lists = snapshots(holders.lists)
        return StoreSnapshot(
            resources: resources, lists: lists,
            remembered: holders.remembered.map { entry in
                RememberedSnapshot(
                    itemType: entry.itemType, id: entry.id, age: entry.loadedAt.map { now - $0 }, cost: entry.cost)
            },
            session: session.snapshot(callers: callers))
    }
}
