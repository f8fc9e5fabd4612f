/// What an operation did to a list.
enum ListOutcome<Item: Identifiable & Sendable, PageKey: Sendable>: Sendable where Item.ID: Sendable {
    case page(FetchedPage<Item, PageKey>)
    case inserted(Item)
    case replaced(Item)
    case removed(Item.ID)
    /// Nothing to load: the end of the list.
    case unchanged
}

/// What the work of a list operation is given.
enum ListWork<PageKey: Sendable>: Sendable {
    case page(PageKey)
    case mutation
}

/// The state machine of one ``ListResource``.
///
/// - First-page loads rank like a resource's reads: the newest caller's answer replaces the list, and the
///   content is `loading(previous:)` exactly while such a caller waits.
/// - A next page belongs to the list it was asked for (its epoch): a refresh whose first page arrives drops it
///   and answers its callers ``NetworkError/superseded``. Until then it appends as usual.
/// - Mutations run in call order and apply to the list at once, also while a refresh is in flight. A page
///   sent before a mutation completed cannot undo it: the mutation is applied again on top of that page.
struct ListMachine<Item: Identifiable & Sendable, PageKey: Sendable & Equatable>: OperationMachine
where Item.ID: Sendable {
    typealias Outcome = ListOutcome<Item, PageKey>
    typealias Context = ListWork<PageKey>

    enum Kind {
        case first(PageKey)
        case next(PageKey, epoch: UInt64)
        case mutation

        var isPage: Bool { !isMutation }

        var isMutation: Bool {
            if case .mutation = self { return true }
            return false
        }
    }

    struct Operation {
        var kind: Kind
        var sentAt: UInt64
        var callers = Callers<Outcome>()
        var task: Task<Void, Never>?
        var queuedWork: OperationWork<Outcome, Context>?
        var isStarted = false
        var isAbandoned = false
    }

    /// A completed mutation that an older page must not undo.
    enum Change {
        case inserted(Item)
        case replaced(Item)
        case removed
    }

    var state: ListState<Item>
    private(set) var version: UInt64 = 0
    /// The list without anything in flight: content never `loading`, no next page loading.
    var settled: ListState<Item>
    private var settledRank: UInt64 = 0
    private var shown: (first: Bool, next: Bool) = (false, false)
    /// Changes whenever a first page replaces the list.
    var epoch: UInt64 = 0
    var nextKey: PageKey?
    /// The keys loaded into this list, to stop a pagination cycle.
    var loadedKeys: [PageKey] = []
    var index: [Item.ID: Int] = [:]
    var changes: [Item.ID: (rank: UInt64, change: Change)] = [:]
    private var clock: UInt64 = 0
    private var nextOperation: UInt64 = 0
    var operations: [OperationID: Operation] = [:]
    var callOperation: [CallID: OperationID] = [:]
    private var joinableFirst: OperationID?
    var nextPage: OperationID?
    private var runningMutation: OperationID?
    private var mutationQueue: [OperationID] = []

    init(state: ListState<Item>, firstPageKey: PageKey) {
        self.state = state
        var settled = state
        if case .loading(let previous) = state.content { settled.content = previous.map { .available($0) } ?? .idle }
        settled.pagination.isLoadingNextPage = false
        self.settled = settled
        shown = (state.content.isLoading, state.pagination.isLoadingNextPage)
        // A list made with pages already loaded does not know its next key: its next page is a reload.
        nextKey = settled.pagination.pagesLoaded == 0 ? firstPageKey : nil
        rebuildIndex()
    }

    var waitingCallerCount: Int { callOperation.count }
    var items: [Item] { state.items }

    // MARK: Asking

    mutating func askFirstPage(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, key: PageKey,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        let rank = tick()
        if let id = joinableFirst, operations[id] != nil {
            operations[id]?.callers.add(call, rank: rank, waiter: waiter)
            callOperation[call] = id
        } else {
            let id = makeOperationID()
            var operation = Operation(kind: .first(key), sentAt: rank, isStarted: true)
            operation.callers.add(call, rank: rank, waiter: waiter)
            operations[id] = operation
            callOperation[call] = id
            joinableFirst = id
            effects.starts.append(
                .init(operation: id, context: .page(key), work: work, isImmediate: true, beginsFirst: false))
        }
        publish(settledChanged: false)
        return effects
    }

    mutating func askNextPage(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, firstPageKey: PageKey,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        // With no list yet, a list about to be replaced, or one made in a fixed state (whose next key is
        // unknown), the next page is the first page.
        let isUnknownNext = settled.pagination.hasMore && nextKey == nil
        if settled.pagination.pagesLoaded == 0 || isFirstPageWanted || isUnknownNext {
            return askFirstPage(call, waiter, key: firstPageKey, work: work)
        }
        var effects = Effects.none
        guard settled.pagination.hasMore, let key = nextKey else {
            effects.resume(waiter, with: .success(.unchanged))
            return effects
        }
        let rank = tick()
        if let id = nextPage, operations[id] != nil {
            operations[id]?.callers.add(call, rank: rank, waiter: waiter)
            callOperation[call] = id
        } else {
            let id = makeOperationID()
            var operation = Operation(kind: .next(key, epoch: epoch), sentAt: rank, isStarted: true)
            operation.callers.add(call, rank: rank, waiter: waiter)
            operations[id] = operation
            callOperation[call] = id
            nextPage = id
            effects.starts.append(
                .init(operation: id, context: .page(key), work: work, isImmediate: true, beginsFirst: false))
        }
        publish(settledChanged: false)
        return effects
    }

    mutating func askMutation(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        let id = makeOperationID()
        let rank = tick()
        var operation = Operation(kind: .mutation, sentAt: rank)
        operation.callers.add(call, rank: rank, waiter: waiter)
        callOperation[call] = id
        if runningMutation == nil {
            runningMutation = id
            operation.isStarted = true
            effects.starts.append(
                .init(operation: id, context: .mutation, work: work, isImmediate: true, beginsFirst: false))
        } else {
            operation.queuedWork = work
            mutationQueue.append(id)
        }
        operations[id] = operation
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
                operations[id] = nil
                mutationQueue.removeAll { $0 == id }
                return effects
            }
            abandon(id, &operation, into: &effects)
        }
        operations[id] = operation
        publish(settledChanged: false)
        return effects
    }

    mutating func begin(_ id: OperationID) -> (shouldRun: Bool, effects: Effects) {
        guard let operation = operations[id] else { return (false, .none) }
        if operation.isAbandoned { return (false, finish(id, with: .failure(.cancelled))) }
        return (true, .none)
    }

    mutating func attach(_ task: Task<Void, Never>, to id: OperationID) -> Effects {
        guard operations[id] != nil else { return .none }
        var effects = Effects.none
        operations[id]?.task = task
        if operations[id]?.isAbandoned == true { effects.cancels.append(task) }
        return effects
    }

    mutating func finish(_ id: OperationID, with result: Result<Outcome, NetworkError>) -> Effects {
        var effects = Effects.none
        guard var operation = operations.removeValue(forKey: id) else { return effects }
        if joinableFirst == id { joinableFirst = nil }
        if nextPage == id { nextPage = nil }
        var settledChanged = false
        var answer = result
        if !operation.callers.isEmpty {
            for call in operation.callers.entries.keys { callOperation[call] = nil }
            switch operation.kind {
            case .first(let key):
                let rank = operation.callers.rank
                if rank > settledRank {
                    switch result {
                    case .success(.page(let page)):
                        replaceList(with: page, key: key, sentAt: operation.sentAt, into: &effects)
                        settledRank = rank
                        settledChanged = true
                    case .failure(let error) where error != .cancelled:
                        settled.content = .failure(error, previous: settled.content.value)
                        settledRank = rank
                        settledChanged = true
                    default: break
                    }
                }
            case .next(let key, let pageEpoch):
                switch result {
                case .success(.page(let page)) where pageEpoch == epoch:
                    if let cycle = appendPage(page, key: key, sentAt: operation.sentAt) { answer = .failure(cycle) }
                    settledChanged = true
                case .failure(let error) where error != .cancelled && pageEpoch == epoch:
                    settled.pagination.nextPageError = error
                    settled.content = .failure(error, previous: settled.content.value ?? [])
                    settledChanged = true
                default: break
                }
            case .mutation:
                if case .success(let outcome) = result { settledChanged = apply(outcome) }
            }
            operation.callers.resumeAll(with: answer, into: &effects)
        }
        if case .mutation = operation.kind {
            // A refresh asked from now on must see what the mutation did on the server. (An abandoned
            // mutation did this when it was abandoned.)
            if !operation.isAbandoned { joinableFirst = nil }
            runningMutation = nil
            startNextMutation(into: &effects)
        }
        forgetSettledChanges()
        publish(settledChanged: settledChanged)
        return effects
    }

    // MARK: Applying answers

    private var isFirstPageWanted: Bool {
        operations.values.contains { if case .first = $0.kind { !$0.callers.isEmpty } else { false } }
    }

    mutating func abandon(_ id: OperationID, _ operation: inout Operation, into effects: inout Effects) {
        operation.isAbandoned = true
        if let task = operation.task { effects.cancels.append(task) }
        if joinableFirst == id || operation.kind.isMutation { joinableFirst = nil }
        if nextPage == id { nextPage = nil }
    }

    private mutating func startNextMutation(into effects: inout Effects) {
        while !mutationQueue.isEmpty {
            let id = mutationQueue.removeFirst()
            guard var operation = operations[id], let work = operation.queuedWork else { continue }
            operation.queuedWork = nil
            operation.isStarted = true
            operations[id] = operation
            runningMutation = id
            effects.starts.append(
                .init(operation: id, context: .mutation, work: work, isImmediate: false, beginsFirst: true))
            return
        }
    }

    mutating func rebuildIndex() {
        index = [:]
        for (position, item) in (settled.content.value ?? []).enumerated() where index[item.id] == nil {
            index[item.id] = position
        }
    }

    /// Recomputes what observers see from the settled list and what is in flight.
    private mutating func publish(settledChanged: Bool) {
        var firstRank: UInt64 = 0
        for operation in operations.values {
            if case .first = operation.kind { firstRank = max(firstRank, operation.callers.rank) }
        }
        let first = firstRank > settledRank
        let next = nextPage.flatMap { operations[$0] }.map { !$0.isAbandoned } ?? false
        guard settledChanged || first != shown.first || next != shown.next else { return }
        shown = (first, next)
        var display = settled
        if next {
            display.pagination.isLoadingNextPage = true
            display.pagination.nextPageError = nil
            if case .failure(_, let previous) = display.content { display.content = .available(previous ?? []) }
        }
        if first { display.content = .loading(previous: settled.content.value) }
        state = display
        version &+= 1
    }

    mutating func tick() -> UInt64 {
        clock &+= 1
        return clock
    }

    private mutating func makeOperationID() -> OperationID {
        nextOperation &+= 1
        return OperationID(raw: nextOperation)
    }
}
