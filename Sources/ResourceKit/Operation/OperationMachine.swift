import Synchronization

/// One caller of an operation, unique in the process. It is drawn before the caller registers, so a
/// cancellation handler that runs first still knows whom it cancels.
struct CallID: Hashable, Sendable {
    let raw: UInt64

    static func next() -> CallID { CallID(raw: callCounter.add(1, ordering: .relaxed).newValue) }
}

private let callCounter = Atomic<UInt64>(0)

/// One operation: one run of a request's work, shared by every caller that joined it.
struct OperationID: Hashable, Sendable {
    let raw: UInt64
}

/// The continuation a caller waits on.
typealias OperationWaiter<Outcome: Sendable> = CheckedContinuation<Result<Outcome, NetworkError>, Never>

/// The network work of an operation. It reports its failure in the result instead of throwing, so the task
/// that runs it never needs a typed-throws closure.
typealias OperationWork<Outcome: Sendable, Context: Sendable> =
    @Sendable (Context) async -> Result<
        Outcome, NetworkError
    >

/// What a transition asks the host to do once the lock is released.
struct OperationEffects<Outcome: Sendable, Context: Sendable> {
    struct Start {
        var operation: OperationID
        var context: Context
        var work: OperationWork<Outcome, Context>
        /// Start on the caller's thread, without a task hop. Only a caller's own ask does that: a start
        /// from a completion would nest one operation's stack inside another's.
        var isImmediate: Bool
        /// Ask the machine (``OperationMachine/begin(_:)``) before running the work: a serial operation
        /// that waited for its predecessor is sent only now.
        var beginsFirst: Bool
    }

    /// A caller to answer. A struct, not a tuple: generic code looks tuple metadata up in a locked cache.
    struct Resumption {
        var waiter: OperationWaiter<Outcome>
        var result: Result<Outcome, NetworkError>
    }

    var resumes: [Resumption] = []
    var cancels: [Task<Void, Never>] = []
    var starts: [Start] = []

    static var none: OperationEffects { OperationEffects() }

    mutating func resume(_ waiter: OperationWaiter<Outcome>, with result: Result<Outcome, NetworkError>) {
        resumes.append(Resumption(waiter: waiter, result: result))
    }
}

/// A pure state machine behind a host's lock: every event is one call that decides, records, and returns the
/// effects to run after the lock. Nothing in it suspends, locks or calls out.
protocol OperationMachine {
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
    mutating func begin(_ operation: OperationID) -> (shouldRun: Bool, effects: Effects)
    /// The task running an operation's work exists now.
    mutating func attach(_ task: Task<Void, Never>, to operation: OperationID) -> Effects
    /// An operation's work returned.
    mutating func finish(_ operation: OperationID, with result: Result<Outcome, NetworkError>) -> Effects

    /// What a store-attached machine learnt about items.
    associatedtype News: Sendable
    /// Takes the news gathered since the last call; `nil` when there is none.
    mutating func takeNews() -> News?
}

/// The callers of one operation and the rank each asked at.
struct Callers<Outcome: Sendable> {
    /// One caller: the rank it asked at and the continuation it waits on.
    struct Entry {
        var rank: UInt64
        var waiter: OperationWaiter<Outcome>
    }

    private(set) var entries: [CallID: Entry] = [:]
    /// The rank of the newest caller: the operation's answer stands for that moment. Kept as callers come
    /// and go, since every transition asks for it (0 with no caller).
    private(set) var rank: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    mutating func add(_ call: CallID, rank: UInt64, waiter: OperationWaiter<Outcome>) {
        entries[call] = Entry(rank: rank, waiter: waiter)
        self.rank = max(self.rank, rank)
    }

    mutating func remove(_ call: CallID) -> OperationWaiter<Outcome>? {
        guard let removed = entries.removeValue(forKey: call) else { return nil }
        if removed.rank == rank { rank = entries.values.reduce(0) { max($0, $1.rank) } }
        return removed.waiter
    }

    /// Gives every caller one rank (a serial operation that starts only now).
    mutating func rerank(_ rank: UInt64) {
        for key in entries.keys { entries[key]?.rank = rank }
        self.rank = entries.isEmpty ? 0 : rank
    }

    mutating func resumeAll(
        with result: Result<Outcome, NetworkError>, into effects: inout OperationEffects<Outcome, some Sendable>
    ) {
        for entry in entries.values { effects.resume(entry.waiter, with: result) }
        entries.removeAll()
        rank = 0
    }
}
