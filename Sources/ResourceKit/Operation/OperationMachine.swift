public import Synchronization

// `@inlinable` over `@usableFromInline internal` declarations, so that a client specializes the read path
// for its own types (unspecialized, it spends its time in generic metadata lookups): this makes them part
// of the module's API surface, and a change to them a change clients compile against.

/// One caller of an operation, unique in the process. It is drawn before the caller registers, so a
/// cancellation handler that runs first still knows whom it cancels.
@usableFromInline struct CallID: Hashable, Sendable {
    @usableFromInline let raw: UInt64

    @inlinable init(raw: UInt64) { self.raw = raw }

    @inlinable static func next() -> CallID { CallID(raw: callCounter.add(1, ordering: .relaxed).newValue) }
}

@usableFromInline let callCounter = Atomic<UInt64>(0)

/// One operation: one run of a request's work, shared by every caller that joined it.
@usableFromInline struct OperationID: Hashable, Sendable {
    @usableFromInline let raw: UInt64

    @inlinable init(raw: UInt64) { self.raw = raw }
}

/// The continuation a caller waits on.
@usableFromInline typealias OperationWaiter<Outcome: Sendable> = CheckedContinuation<
    Result<Outcome, NetworkError>, Never
>

/// The network work of an operation. It reports its failure in the result instead of throwing, so the task
/// that runs it never needs a typed-throws closure.
@usableFromInline typealias OperationWork<Outcome: Sendable, Context: Sendable> =
    @Sendable (Context) async -> Result<
        Outcome, NetworkError
    >

/// What a transition asks the host to do once the lock is released.
@usableFromInline struct OperationEffects<Outcome: Sendable, Context: Sendable> {
    @usableFromInline struct Start: Sendable {
        @usableFromInline var operation: OperationID
        @usableFromInline var context: Context
        @usableFromInline var work: OperationWork<Outcome, Context>
        /// Start on the caller's thread, without a task hop. Only a caller's own ask does that: a start
        /// from a completion would nest one operation's stack inside another's.
        @usableFromInline var isImmediate: Bool
        /// Ask the machine (``OperationMachine/begin(_:)``) before running the work: a serial operation
        /// that waited for its predecessor is sent only now.
        @usableFromInline var beginsFirst: Bool

        @inlinable init(
            operation: OperationID, context: Context, work: @escaping OperationWork<Outcome, Context>,
            isImmediate: Bool, beginsFirst: Bool
        ) {
            self.operation = operation
            self.context = context
            self.work = work
            self.isImmediate = isImmediate
            self.beginsFirst = beginsFirst
        }
    }

    /// A caller to answer. A struct, not a tuple: generic code looks tuple metadata up in a locked cache.
    @usableFromInline struct Resumption {
        @usableFromInline var waiter: OperationWaiter<Outcome>
        @usableFromInline var result: Result<Outcome, NetworkError>

        @inlinable init(waiter: OperationWaiter<Outcome>, result: Result<Outcome, NetworkError>) {
            self.waiter = waiter
            self.result = result
        }
    }

    @usableFromInline var resumes: [Resumption] = []
    @usableFromInline var cancels: [Task<Void, Never>] = []
    @usableFromInline var starts: [Start] = []
    /// The ask queued a change behind another that runs: it waits for its turn, and shares nothing.
    @usableFromInline var queued = false

    @inlinable init() {}

    @inlinable static var none: OperationEffects { OperationEffects() }

    @inlinable mutating func resume(_ waiter: OperationWaiter<Outcome>, with result: Result<Outcome, NetworkError>) {
        resumes.append(Resumption(waiter: waiter, result: result))
    }
}

/// A pure state machine behind a host's lock: every event is one call that decides, records, and returns the
/// effects to run after the lock. Nothing in it suspends, locks or calls out. What orders and dates events
/// comes in with them: the ranks to draw (``Ranks``) and, for an event that lands an answer, the time.
/// (What it tells the store, its news, is taken after each event: ``takeNews()``.)
@usableFromInline protocol OperationMachine {
    associatedtype State: Sendable
    associatedtype Outcome: Sendable
    associatedtype Context: Sendable
    typealias Effects = OperationEffects<Outcome, Context>

    /// What observers see now.
    var state: State { get }
    /// Changes exactly when ``state`` changes.
    var version: UInt64 { get }
    /// Callers that wait for an answer, each counted once.
    var waitingCallerCount: Int { get }

    /// A caller left: it is answered `.cancelled` at once and counts as never having asked.
    mutating func cancel(_ call: CallID) -> Effects
    /// A serial operation's turn has come, just before its work runs; `false` skips the work (every caller
    /// left meanwhile, and the machine has finished the operation).
    mutating func begin(_ operation: OperationID, ranks: inout Ranks) -> (shouldRun: Bool, effects: Effects)
    /// The task running an operation's work exists now.
    mutating func attach(_ task: Task<Void, Never>, to operation: OperationID) -> Effects
    /// An operation's work returned, at `now` on the session's timeline (`nil`: its answer is not dated).
    mutating func finish(
        _ operation: OperationID, with result: Result<Outcome, NetworkError>, ranks: inout Ranks, now: Duration?
    ) -> Effects

    /// What a store-attached machine learnt about items.
    associatedtype News: Sendable
    /// Takes the news gathered since the last call; `nil` when there is none.
    mutating func takeNews() -> News?
}

/// The callers of one operation and the rank each asked at.
@usableFromInline struct Callers<Outcome: Sendable> {
    /// One caller: the rank it asked at and the continuation it waits on.
    @usableFromInline struct Entry {
        @usableFromInline var rank: UInt64
        @usableFromInline var waiter: OperationWaiter<Outcome>

        @inlinable init(rank: UInt64, waiter: OperationWaiter<Outcome>) {
            self.rank = rank
            self.waiter = waiter
        }
    }

    @usableFromInline var entries: [CallID: Entry] = [:]
    /// The rank of the newest caller: the operation's answer stands for that moment. Kept as callers come
    /// and go, since every transition asks for it (0 with no caller).
    @usableFromInline var rank: UInt64 = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { entries.isEmpty }
    @inlinable var count: Int { entries.count }

    @inlinable mutating func add(_ call: CallID, rank: UInt64, waiter: OperationWaiter<Outcome>) {
        entries[call] = Entry(rank: rank, waiter: waiter)
        self.rank = max(self.rank, rank)
    }

    @inlinable mutating func remove(_ call: CallID) -> OperationWaiter<Outcome>? {
        guard let removed = entries.removeValue(forKey: call) else { return nil }
        if removed.rank == rank { rank = entries.values.reduce(0) { max($0, $1.rank) } }
        return removed.waiter
    }

    /// Gives every caller one rank (a serial operation that starts only now).
    @inlinable mutating func rerank(_ rank: UInt64) {
        for key in entries.keys { entries[key]?.rank = rank }
        self.rank = entries.isEmpty ? 0 : rank
    }

    @inlinable mutating func resumeAll(
        with result: Result<Outcome, NetworkError>, into effects: inout OperationEffects<Outcome, some Sendable>
    ) {
        for entry in entries.values { effects.resume(entry.waiter, with: result) }
        entries.removeAll()
        rank = 0
    }
}
