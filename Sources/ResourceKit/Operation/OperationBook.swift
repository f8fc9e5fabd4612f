public import Synchronization

// `@inlinable` over `@usableFromInline internal` declarations, so that a client specializes the read path
// for its own types (unspecialized, it spends its time in generic metadata lookups): this makes them part
// of the module's API surface, and a change to them a change clients compile against.

/// Ranks are drawn from one counter for the whole process, so that ranks of different resources and lists
/// compare: a store decides with them which of two answers about one item is newer.
@usableFromInline let rankCounter = Atomic<UInt64>(0)

/// The next rank of the process-wide clock.
@inlinable func nextRank() -> UInt64 { rankCounter.add(1, ordering: .relaxed).newValue }

/// Where a transition's ranks come from, given to the machine with the event. A host passes ``process``,
/// which draws from the process-wide clock as the transition needs them (one that orders nothing draws
/// nothing); a test passes ``scripted(from:)``, so that a machine's transitions are a function of their
/// arguments.
@usableFromInline struct Ranks {
    /// The next scripted rank; 0 draws from the process-wide clock.
    @usableFromInline var next: UInt64

    @inlinable init(next: UInt64) { self.next = next }

    /// The process-wide clock's ranks.
    @inlinable static var process: Ranks { Ranks(next: 0) }

    /// `first` (at least 1), then each next number, one per draw.
    static func scripted(from first: UInt64) -> Ranks { Ranks(next: max(first, 1)) }

    /// The next rank: greater than every rank drawn before it, from the process-wide clock or the script.
    @inlinable mutating func draw() -> UInt64 {
        guard next != 0 else { return nextRank() }
        defer { next &+= 1 }
        return next
    }
}

/// The bookkeeping both machines share: which callers wait on which operation, the rank clock, and the
/// serial queue that runs mutations one after another. It decides nothing about state: ``ResourceMachine``
/// and ``ListMachine`` do that, and call it inside the same transition.
@usableFromInline struct OperationBook<Outcome: Sendable, Context: Sendable, Kind> {
    @usableFromInline typealias Effects = OperationEffects<Outcome, Context>

    @usableFromInline struct Operation {
        @usableFromInline var kind: Kind
        /// The rank at which its request was sent; a serial operation's is the moment its turn came.
        @usableFromInline var sentAt: UInt64
        @usableFromInline var callers = Callers<Outcome>()
        @usableFromInline var task: Task<Void, Never>?
        /// A serial operation waiting for its turn, and the work it will run then.
        @usableFromInline var queued: Queued?
        @usableFromInline var isSerial = false
        /// Every caller left while its work runs; its answer goes nowhere.
        @usableFromInline var isAbandoned = false

        @inlinable init(kind: Kind, sentAt: UInt64) {
            self.kind = kind
            self.sentAt = sentAt
        }
    }

    /// The work a queued serial operation runs when its turn comes.
    @usableFromInline struct Queued {
        @usableFromInline var context: Context
        @usableFromInline var work: OperationWork<Outcome, Context>

        @inlinable init(context: Context, work: @escaping OperationWork<Outcome, Context>) {
            self.context = context
            self.work = work
        }
    }

    /// What became of an operation when one of its callers left.
    @usableFromInline enum Departure {
        /// The caller was not waiting (any more).
        case none
        /// Other callers still wait.
        case stillWanted(OperationID)
        /// It was queued and never sent: it is gone.
        case dropped(Operation)
        /// Its work runs on with nobody waiting; its task is cancelled.
        case abandoned(OperationID, Operation)
    }

    @usableFromInline var operations: [OperationID: Operation] = [:]
    @usableFromInline var callOperation: [CallID: OperationID] = [:]
    @usableFromInline var lastID: UInt64 = 0
    @usableFromInline var runningSerial: OperationID?
    @usableFromInline var serialQueue: [OperationID] = []

    /// How many operations and waiting callers there are: `operations.count` and `callOperation.count`, kept
    /// here, so that a transition that starts or ends none (a store's news reaching a list) reads them from the
    /// machine itself, not from two dictionaries' storage elsewhere on the heap (a cache miss each, for every
    /// list that news reaches).
    @usableFromInline var operationCount = 0
    @usableFromInline var waitingCallerCount = 0

    @inlinable init() {}

    /// Checks, in debug builds, that the counts are the dictionaries'.
    @inlinable func checkCounts() {
        assert(operationCount == operations.count && waitingCallerCount == callOperation.count)
    }

    /// The next rank: every ask, completion and serial turn takes one.

    /// Starts an operation for one caller; its work runs at once, on the caller's thread.
    @discardableResult
    @inlinable mutating func start(
        _ kind: Kind, _ call: CallID, _ waiter: OperationWaiter<Outcome>, context: Context,
        work: @escaping OperationWork<Outcome, Context>, into effects: inout Effects, ranks: inout Ranks
    ) -> OperationID {
        let id = add(kind, call, waiter, ranks: &ranks)
        effects.starts.append(.init(operation: id, context: context, work: work, isImmediate: true, beginsFirst: false))
        return id
    }

    /// Adds a caller to an operation in flight.
    @inlinable mutating func join(
        _ id: OperationID, _ call: CallID, _ waiter: OperationWaiter<Outcome>, ranks: inout Ranks
    ) {
        let rank = ranks.draw()
        operations[id]?.callers.add(call, rank: rank, waiter: waiter)
        if callOperation.updateValue(id, forKey: call) == nil { waitingCallerCount += 1 }
        checkCounts()
    }

    /// A serial operation: it starts now when no other runs, or after every serial operation asked before it.
    @inlinable mutating func enqueueSerial(
        _ kind: Kind, _ call: CallID, _ waiter: OperationWaiter<Outcome>, context: Context,
        work: @escaping OperationWork<Outcome, Context>, into effects: inout Effects, ranks: inout Ranks
    ) {
        let id = add(kind, call, waiter, ranks: &ranks)
        operations[id]?.isSerial = true
        if runningSerial == nil {
            runningSerial = id
            effects.starts.append(
                .init(operation: id, context: context, work: work, isImmediate: true, beginsFirst: false))
        } else {
            operations[id]?.queued = Queued(context: context, work: work)
            serialQueue.append(id)
            effects.queued = true
        }
    }

    /// A caller leaves: it is answered `.cancelled` at once. When it was the last, a queued operation is
    /// dropped and a running one abandoned (its task cancelled).
    @inlinable mutating func leave(_ call: CallID, into effects: inout Effects) -> Departure {
        guard let id = callOperation.removeValue(forKey: call) else { return .none }
        waitingCallerCount -= 1
        defer { checkCounts() }
        guard var operation = operations[id], let waiter = operation.callers.remove(call) else { return .none }
        effects.resume(waiter, with: .failure(.cancelled))
        guard operation.callers.isEmpty else {
            operations[id] = operation
            return .stillWanted(id)
        }
        if operation.queued != nil {
            operations[id] = nil
            operationCount -= 1
            serialQueue.removeAll { $0 == id }
            return .dropped(operation)
        }
        abandon(&operation, into: &effects)
        operations[id] = operation
        return .abandoned(id, operation)
    }

    /// Answers every caller of an operation with `result` now and abandons it: its later answer goes nowhere.
    @inlinable mutating func dismiss(
        _ id: OperationID, with result: Result<Outcome, NetworkError>, into effects: inout Effects
    ) {
        guard var operation = operations[id] else { return }
        forgetCallers(of: operation)
        operation.callers.resumeAll(with: result, into: &effects)
        abandon(&operation, into: &effects)
        operations[id] = operation
    }

    /// A serial operation's turn: `nil` if it is unknown, `false` if abandoned meanwhile. Otherwise it is
    /// sent now. (Its callers were ranked when the operation before it completed.)
    @inlinable mutating func begin(_ id: OperationID, ranks: inout Ranks) -> Bool? {
        guard var operation = operations[id] else { return nil }
        if operation.isAbandoned { return false }
        operation.sentAt = ranks.draw()
        operations[id] = operation
        return true
    }

    /// The task running an operation exists now; cancel it if every caller left before.
    @inlinable mutating func attach(_ task: Task<Void, Never>, to id: OperationID, into effects: inout Effects) {
        guard operations[id] != nil else { return }
        operations[id]?.task = task
        if operations[id]?.isAbandoned == true { effects.cancels.append(task) }
    }

    /// An operation's work returned: it is forgotten, and a serial one lets the next in the queue start.
    /// The returned operation still holds its callers, for the machine to rank and answer.
    @inlinable mutating func finish(_ id: OperationID, into effects: inout Effects, ranks: inout Ranks) -> Operation? {
        guard let operation = operations.removeValue(forKey: id) else { return nil }
        operationCount -= 1
        forgetCallers(of: operation)
        if operation.isSerial, runningSerial == id {
            runningSerial = nil
            startNextSerial(into: &effects, ranks: &ranks)
        }
        return operation
    }

    @inlinable mutating func startNextSerial(into effects: inout Effects, ranks: inout Ranks) {
        while !serialQueue.isEmpty {
            let id = serialQueue.removeFirst()
            guard let queued = operations[id]?.queued else { continue }
            operations[id]?.queued = nil
            // Its turn has come: it is newer than the completion that let it start, so the state keeps
            // showing it loading in between.
            let rank = ranks.draw()
            operations[id]?.callers.rerank(rank)
            runningSerial = id
            effects.starts.append(
                .init(operation: id, context: queued.context, work: queued.work, isImmediate: false, beginsFirst: true))
            return
        }
    }

    @inlinable mutating func add(
        _ kind: Kind, _ call: CallID, _ waiter: OperationWaiter<Outcome>, ranks: inout Ranks
    ) -> OperationID {
        lastID &+= 1
        let id = OperationID(raw: lastID)
        let rank = ranks.draw()
        var operation = Operation(kind: kind, sentAt: rank)
        operation.callers.add(call, rank: rank, waiter: waiter)
        operations[id] = operation
        operationCount += 1
        if callOperation.updateValue(id, forKey: call) == nil { waitingCallerCount += 1 }
        checkCounts()
        return id
    }

    /// The operation's callers wait no more.
    @inlinable mutating func forgetCallers(of operation: Operation) {
        for call in operation.callers.entries.keys where callOperation.removeValue(forKey: call) != nil {
            waitingCallerCount -= 1
        }
        checkCounts()
    }

    @inlinable func abandon(_ operation: inout Operation, into effects: inout Effects) {
        operation.isAbandoned = true
        if let task = operation.task { effects.cancels.append(task) }
    }
}
