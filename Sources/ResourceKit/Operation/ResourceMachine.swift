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

    enum Kind {
        case read(RequestKey?)
        case mutation
    }

    private(set) var state: ResourceState<Value>
    private(set) var version: UInt64 = 0
    /// The newest answer that landed (or the initial state), and its rank.
    private var settled: ResourceState<Value>
    private var settledRank: UInt64 = 0
    /// The read whose answer is `settled`, for ``ReadPolicy/skipIfLoaded``.
    private var loadedKey: RequestKey?
    private var isShowingLoading: Bool
    private var book = OperationBook<Outcome, Void, Kind>()
    /// Reads in flight that a new caller may join.
    private var joinable: [RequestKey: OperationID] = [:]

    init(state: ResourceState<Value>) {
        self.state = state
        isShowingLoading = state.isLoading
        // A resource made in `.loading` for a preview settles on its previous value when an operation ends.
        settled = if case .loading(let previous) = state { previous.map { .available($0) } ?? .idle } else { state }
    }

    var waitingCallerCount: Int { book.waitingCallerCount }

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
        if let key, let id = joinable[key], book.operations[id] != nil {
            book.join(id, call, waiter)
        } else {
            let id = book.start(.read(key), call, waiter, context: (), work: work, into: &effects)
            if let key { joinable[key] = id }
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
        book.enqueueSerial(.mutation, call, waiter, context: (), work: work, into: &effects)
        publish(settledChanged: false)
        return effects
    }

    // MARK: Events

    mutating func cancel(_ call: CallID) -> Effects {
        var effects = Effects.none
        if case .abandoned(let id, let operation) = book.leave(call, into: &effects) {
            switch operation.kind {
            case .read(let key?) where joinable[key] == id: joinable[key] = nil
            // A mutation may already have reached the server: reads sent before it are not joined again.
            case .mutation: joinable.removeAll()
            default: break
            }
        }
        publish(settledChanged: false)
        return effects
    }

    mutating func begin(_ id: OperationID) -> (shouldRun: Bool, effects: Effects) {
        switch book.begin(id) {
        case nil: return (false, .none)
        case false?: return (false, finish(id, with: .failure(.cancelled)))
        case true?:
            publish(settledChanged: false)
            return (true, .none)
        }
    }

    mutating func attach(_ task: Task<Void, Never>, to id: OperationID) -> Effects {
        var effects = Effects.none
        book.attach(task, to: id, into: &effects)
        return effects
    }

    mutating func finish(_ id: OperationID, with result: Result<Outcome, NetworkError>) -> Effects {
        var effects = Effects.none
        guard var operation = book.finish(id, into: &effects) else { return effects }
        var settledChanged = false
        let key: RequestKey?
        switch operation.kind {
        case .read(let readKey): key = readKey
        case .mutation: key = nil
        }
        if let key, joinable[key] == id { joinable[key] = nil }
        if !operation.callers.isEmpty {
            // A mutation's answer is as new as its completion: every read asked before it is older.
            let rank = operation.isSerial ? book.tick() : operation.callers.rank
            if rank > settledRank, let landed = settledState(after: result) {
                settled = landed
                settledRank = rank
                if !operation.isSerial, case .success = result { loadedKey = key } else { loadedKey = nil }
                settledChanged = true
            }
            operation.callers.resumeAll(with: result, into: &effects)
        }
        // Whatever a mutation did on the server, a read sent before it may hold the old value. (An abandoned
        // mutation did this when it was abandoned.)
        if operation.isSerial, !operation.isAbandoned { joinable.removeAll() }
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

    /// Recomputes what observers see: `loading` while a caller newer than the settled answer waits.
    private mutating func publish(settledChanged: Bool) {
        var newest: UInt64 = 0
        for operation in book.operations.values { newest = max(newest, operation.callers.rank) }
        let loading = newest > settledRank
        guard settledChanged || loading != isShowingLoading else { return }
        isShowingLoading = loading
        state = loading ? .loading(previous: settled.value) : settled
        version &+= 1
    }
}
