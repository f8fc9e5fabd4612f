/// What an operation did to a resource's value.
enum ResourceOutcome<Value: Sendable>: Sendable {
    case value(Value)
    case removed
}

/// The state machine of one ``Resource``.
///
/// Every caller gets a rank, the "asked at" sequence number. An answer stands for its newest caller's rank
/// (a mutation's for the moment it completed) and lands only when it is newer than the answer shown, so:
/// - the state is `loading` exactly while a caller newer than the shown answer waits;
/// - a caller that leaves counts as never having asked, and the state is what it would have been;
/// - an answer older than a completed mutation never lands over it, and no read asked after a mutation
///   completed joins a read sent before it.
struct ResourceMachine<Value: Sendable>: OperationMachine {
    typealias Outcome = ResourceOutcome<Value>
    typealias Context = Void

    private enum Kind {
        case read(RequestKey?)
        case mutation
    }

    private struct Operation {
        var kind: Kind
        var callers = Callers<Outcome>()
        var task: Task<Void, Never>?
        /// A queued mutation's work, held until the mutation before it has returned.
        var queuedWork: OperationWork<Outcome, Void>?
        var isStarted = false
        /// Every caller left while the work runs; its answer goes nowhere.
        var isAbandoned = false

        var isMutation: Bool {
            if case .mutation = kind { return true }
            return false
        }
    }

    private(set) var state: ResourceState<Value>
    private(set) var version: UInt64 = 0
    /// The newest answer that landed (or the initial state), and its rank.
    private var settled: ResourceState<Value>
    private var settledRank: UInt64 = 0
    /// The read whose answer is `settled`, for ``ReadPolicy/skipIfLoaded``.
    private var loadedKey: RequestKey?
    private var isShowingLoading: Bool
    private var clock: UInt64 = 0
    private var nextOperation: UInt64 = 0
    private var operations: [OperationID: Operation] = [:]
    private var callOperation: [CallID: OperationID] = [:]
    /// Reads in flight that a new caller may join.
    private var joinable: [RequestKey: OperationID] = [:]
    private var runningMutation: OperationID?
    private var mutationQueue: [OperationID] = []

    init(state: ResourceState<Value>) {
        self.state = state
        isShowingLoading = state.isLoading
        // A resource made in `.loading` for a preview settles on its previous value when an operation ends.
        settled = if case .loading(let previous) = state { previous.map { .available($0) } ?? .idle } else { state }
    }

    var waitingCallerCount: Int { callOperation.count }

    // MARK: Asking

    mutating func askRead(
        _ call: CallID,
        _ waiter: OperationWaiter<Outcome>,
        key: RequestKey?,
        policy: ReadPolicy,
        work: @escaping OperationWork<Outcome, Void>
    ) -> Effects {
        var effects = Effects.none
        if policy == .skipIfLoaded, let key, loadedKey == key, case .available(let value) = state {
            effects.resume(waiter, with: .success(.value(value)))
            return effects
        }
        let rank = tick()
        if let key, let id = joinable[key], operations[id] != nil {
            operations[id]?.callers.add(call, rank: rank, waiter: waiter)
            callOperation[call] = id
        } else {
            let id = makeOperationID()
            var operation = Operation(kind: .read(key), isStarted: true)
            operation.callers.add(call, rank: rank, waiter: waiter)
            operations[id] = operation
            callOperation[call] = id
            if let key { joinable[key] = id }
            effects.starts.append(.init(operation: id, context: (), work: work, isImmediate: true, beginsFirst: false))
        }
        publish(settledChanged: false)
        return effects
    }

    mutating func askMutation(
        _ call: CallID,
        _ waiter: OperationWaiter<Outcome>,
        work: @escaping OperationWork<Outcome, Void>
    ) -> Effects {
        var effects = Effects.none
        let id = makeOperationID()
        var operation = Operation(kind: .mutation)
        operation.callers.add(call, rank: tick(), waiter: waiter)
        callOperation[call] = id
        if runningMutation == nil {
            runningMutation = id
            operation.isStarted = true
            effects.starts.append(.init(operation: id, context: (), work: work, isImmediate: true, beginsFirst: false))
        } else {
            operation.queuedWork = work
            mutationQueue.append(id)
        }
        operations[id] = operation
        publish(settledChanged: false)
        return effects
    }

    // MARK: Events

    mutating func cancel(_ call: CallID) -> Effects {
        var effects = Effects.none
        guard let id = callOperation.removeValue(forKey: call), var operation = operations[id],
            let waiter = operation.callers.remove(call)
        else { return effects }
        effects.resume(waiter, with: .failure(.cancelled))
        if operation.callers.isEmpty {
            if !operation.isStarted {
                // A queued mutation that never started: nothing was sent, so it simply goes.
                operations[id] = nil
                mutationQueue.removeAll { $0 == id }
                publish(settledChanged: false)
                return effects
            }
            operation.isAbandoned = true
            if let task = operation.task { effects.cancels.append(task) }
            switch operation.kind {
            case .read(let key?) where joinable[key] == id: joinable[key] = nil
            // A mutation may already have reached the server: reads sent before it are not joined again.
            case .mutation: joinable.removeAll()
            default: break
            }
        }
        operations[id] = operation
        publish(settledChanged: false)
        return effects
    }

    mutating func begin(_ id: OperationID) -> (shouldRun: Bool, effects: Effects) {
        guard var operation = operations[id] else { return (false, .none) }
        if operation.isAbandoned { return (false, finish(id, with: .failure(.cancelled))) }
        // Sent only now: it ranks after everything asked while it waited for its turn.
        operation.callers.rerank(tick())
        operations[id] = operation
        publish(settledChanged: false)
        return (true, .none)
    }

    mutating func attach(_ task: Task<Void, Never>, to id: OperationID) -> Effects {
        guard operations[id] != nil else { return .none }
        var effects = Effects.none
        operations[id]?.task = task
        // Every caller left before the task existed: cancel it now.
        if operations[id]?.isAbandoned == true { effects.cancels.append(task) }
        return effects
    }

    mutating func finish(_ id: OperationID, with result: Result<Outcome, NetworkError>) -> Effects {
        var effects = Effects.none
        guard var operation = operations.removeValue(forKey: id) else { return effects }
        var settledChanged = false
        if case .read(let key?) = operation.kind, joinable[key] == id { joinable[key] = nil }
        if !operation.callers.isEmpty {
            for call in operation.callers.entries.keys { callOperation[call] = nil }
            // A mutation's answer is as new as its completion: every read asked before it is older.
            let rank = operation.isMutation ? tick() : operation.callers.rank
            if rank > settledRank, let landed = settledState(after: result) {
                settled = landed
                settledRank = rank
                if case .read(let key) = operation.kind, case .success = result {
                    loadedKey = key
                } else {
                    loadedKey = nil
                }
                settledChanged = true
            }
            operation.callers.resumeAll(with: result, into: &effects)
        }
        if operation.isMutation {
            // Whatever it did on the server, a read sent before it may hold the old value. (An abandoned
            // mutation did this when it was abandoned.)
            if !operation.isAbandoned { joinable.removeAll() }
            runningMutation = nil
            startNextMutation(into: &effects)
        }
        publish(settledChanged: settledChanged)
        return effects
    }

    // MARK: Helpers

    private func settledState(after result: Result<Outcome, NetworkError>) -> ResourceState<Value>? {
        switch result {
        case .success(.value(let value)): .available(value)
        case .success(.removed): .idle
        case .failure(.cancelled): nil
        case .failure(let error): .failure(error, previous: settled.value)
        }
    }

    private mutating func startNextMutation(into effects: inout Effects) {
        while !mutationQueue.isEmpty {
            let id = mutationQueue.removeFirst()
            guard var operation = operations[id], let work = operation.queuedWork else { continue }
            operation.queuedWork = nil
            operation.isStarted = true
            operations[id] = operation
            runningMutation = id
            effects.starts.append(.init(operation: id, context: (), work: work, isImmediate: false, beginsFirst: true))
            return
        }
    }

    /// Recomputes what observers see: `loading` while a caller newer than the settled answer waits.
    private mutating func publish(settledChanged: Bool) {
        var newest: UInt64 = 0
        for operation in operations.values {
            newest = max(newest, operation.callers.rank)
        }
        let loading = newest > settledRank
        guard settledChanged || loading != isShowingLoading else { return }
        isShowingLoading = loading
        state = loading ? .loading(previous: settled.value) : settled
        version &+= 1
    }

    private mutating func tick() -> UInt64 {
        clock &+= 1
        return clock
    }

    private mutating func makeOperationID() -> OperationID {
        nextOperation &+= 1
        return OperationID(raw: nextOperation)
    }
}
