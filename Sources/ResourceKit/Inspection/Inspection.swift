/// What the store tells an inspection of one live resource or list (``ObjectSnapshot``, in
/// `StoreSnapshot.swift`, is made of it): read under the object's lock, nothing kept.
struct ObjectInspection: Sendable {
    var label: String
    /// The state's case, never its value.
    var state: String
    var observers: Int
    /// What its machine tells.
    var machine: MachineInspection
}

/// One value the store remembers, as an inspection sees it.
struct RememberedInspection: Sendable {
    var itemType: String
    var id: String
    /// When it was loaded, on the session's timeline.
    var loadedAt: Duration?
    var cost: Int
}

/// What a machine tells an inspection.
struct MachineInspection: Sendable {
    var waitingCallers: Int
    var operationsInFlight: Int
    /// When its value was loaded, on the session's timeline.
    var loadedAt: Duration?
    var pendingOptimisticChanges: Int
    /// The hash of each running operation's task, and how many callers it answers.
    var tasks: [(task: Int, callers: Int)]
}

extension OperationBook {
    var inspectedTasks: [(task: Int, callers: Int)] {
        operations.values.compactMap { operation in operation.task.map { ($0.hashValue, operation.callers.count) } }
    }
}

extension ResourceMachine {
    var inspection: MachineInspection {
        MachineInspection(
            waitingCallers: waitingCallerCount, operationsInFlight: book.operations.count, loadedAt: loadedAt,
            pendingOptimisticChanges: layers.count, tasks: book.inspectedTasks)
    }
}

extension ListMachine {
    var inspection: MachineInspection {
        MachineInspection(
            waitingCallers: waitingCallerCount, operationsInFlight: book.operations.count, loadedAt: loadedAt,
            pendingOptimisticChanges: layers.values.reduce(0) { $0 + $1.count }, tasks: book.inspectedTasks)
    }
}

extension MachineHost where Self: EventSubject, Machine.State == ReportedState {
    func inspect(_ inspection: (Machine) -> MachineInspection) -> ObjectInspection {
        let (state, observers, machine) = storage.withLock {
            ($0.machine.state, $0.feed?.readerCount ?? 0, inspection($0.machine))
        }
        return ObjectInspection(
            label: cachedLabel, state: Self.diagnosticState(state).summary, observers: observers, machine: machine)
    }
}

extension ResourceStore {
    /// Every live resource and list, and the values the store remembers, newest first: one pass under the
    /// store's lock and each object's.
    func inspectHolders() -> (
        resources: [ObjectInspection], lists: [ObjectInspection], remembered: [RememberedInspection]
    ) {
        let (resources, lists, remembered) = withRegistry { registry in
            (
                registry.resources.values.compactMap(\.object), registry.lists.values.compactMap(\.object),
                registry.cache.newestFirst
            )
        }
        return (
            resources.map { $0.inspect() }, lists.map { $0.inspect() },
            remembered.map { entry in
                RememberedInspection(
                    itemType: String(describing: type(of: entry.value.value)),
                    id: String(describing: entry.key.id.base), loadedAt: entry.value.loadedAt, cost: entry.cost)
            }
        )
    }
}
