import Foundation
public import ResourceKit

/// A picture of a session at one moment: its calls in flight. ``ResourceKitHTTP/NetworkSession/snapshot()`` takes it.
///
/// `Codable`, so that a tool can read it as JSON. URLs are redacted like the logs.
public struct SessionSnapshot: Sendable, Equatable, Codable {
    /// The session's calls in flight, oldest first.
    public var requests: [RequestSnapshot]

    /// Creates a snapshot.
    /// - Parameter requests: The calls in flight.
    public init(requests: [RequestSnapshot]) { self.requests = requests }
}

/// One call of a session in flight.
public struct RequestSnapshot: Sendable, Equatable, Codable {
    /// The call's id, as `DiagnosticEvent.requestID` gives it.
    public var id: UInt64
    /// The method.
    public var method: String
    /// The URL, redacted.
    public var url: String
    /// How long ago the call started (on the session's clock).
    public var elapsed: Duration
    /// The attempt in flight (1 for the first; higher after retries).
    public var attempt: Int
    /// How many callers share the call: the callers of the resource or list operation that sent it, when a
    /// store's snapshot can tell (``ResourceKit/ResourceStore/snapshot()``); 1 otherwise.
    public var callers: Int

    /// Creates a request snapshot.
    /// - Parameters:
    ///   - id: The call's id.
    ///   - method: The method.
    ///   - url: The URL, redacted.
    ///   - elapsed: How long ago it started.
    ///   - attempt: The attempt in flight.
    ///   - callers: How many callers share it.
    public init(id: UInt64, method: String, url: String, elapsed: Duration, attempt: Int, callers: Int) {
        self.id = id
        self.method = method
        self.url = url
        self.elapsed = elapsed
        self.attempt = attempt
        self.callers = callers
    }
}

/// A picture of a store at one moment: its live resources and lists, what it remembers of freed ones, and
/// its session's calls in flight. ``ResourceKit/ResourceStore/snapshot()`` takes it.
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
    /// How long ago its value was loaded, on the session's clock; `nil` with no value, or stale (invalidated).
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

extension NetworkSession {
    /// The session's calls in flight now: cheap (one lock), and `Codable`.
    /// - Returns: The snapshot.
    public nonisolated func snapshot() -> SessionSnapshot {
        snapshot(callers: [:])
    }

    nonisolated func snapshot(callers: [Int: Int]) -> SessionSnapshot {
        let now = timeline.now
        return SessionSnapshot(
            requests: inFlight.current.map { id, entry in
                RequestSnapshot(
                    id: id, method: entry.method, url: configuration.redaction.redact(entry.url),
                    elapsed: now - entry.startedAt, attempt: entry.attempt,
                    callers: entry.task.flatMap { callers[$0] } ?? 1)
            })
    }
}

extension ResourceStore {
    /// What the store holds now: every live resource and list (state, observers, waiting callers, age,
    /// optimistic changes pending), the values it remembers, and its session's calls in flight with how many
    /// callers share each. Cheap: one pass under the store's lock and each object's; `Codable`.
    /// - Returns: The snapshot.
    public func snapshot() -> StoreSnapshot {
        let now = session.timeline.now
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
