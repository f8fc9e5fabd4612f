// The store's news path (`receive(_:placement:)` in ListMachine+Store.swift and what it reaches) is `@inlinable`
// over `@usableFromInline` members, so that a client specializes it for its own item types: unspecialized, one
// update reaching a list spent most of its ~3 µs in generic metadata lookups. That makes these members part of
// the module's API surface, and a change to them a change clients compile against.

/// What an operation did to a list.
@usableFromInline enum ListOutcome<Item: Identifiable & Sendable, PageKey: Sendable>: Sendable, HandedOffOutcome
where Item.ID: Sendable {
    case page(FetchedPage<Item, PageKey>)
    /// A created item, with the validators the server answered with (the item's version in the store).
    case inserted(Item, Validators?)
    /// A changed item, with the validators the server answered with.
    case replaced(Item, Validators?)
    case removed(Item.ID)
    /// Nothing to load: the end of the list.
    case unchanged
    /// A change handed to a store extension that shows it until it settles (the outbox keeps it): nothing
    /// lands now, and the error says why.
    case handedOff(NetworkError)
}

/// What the work of a list operation is given.
@usableFromInline enum ListWork<PageKey: Sendable>: Sendable {
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
@usableFromInline struct ListMachine<Item: Identifiable & Sendable, PageKey: Sendable & Equatable>: OperationMachine
where Item.ID: Sendable {
    @usableFromInline typealias Outcome = ListOutcome<Item, PageKey>
    @usableFromInline typealias Context = ListWork<PageKey>

    @usableFromInline enum Kind {
        case first(PageKey)
        case next(PageKey, epoch: UInt64)
        /// A create, update or delete; `layer` names its optimistic change and the item it shows over.
        case mutation(layer: (token: LayerToken, id: Item.ID)?)
    }

    typealias Operation = OperationBook<Outcome, Context, Kind>.Operation

    /// A completed mutation that an older page must not undo. A created item a page sent before it cannot
    /// hold shows at the start of the list or at its end (its placement's).
    @usableFromInline enum Change {
        case inserted(Item, atStart: Bool)
        case replaced(Item)
        case removed
    }

    // `@usableFromInline` (not inlinable): they meet requirements of `OperationMachine`, whose callers in
    // MachineHost.swift are inlinable for `Resource`'s read path; part of the module's API surface.
    @usableFromInline var state: ListState<Item>
    @usableFromInline var version: UInt64 = 0
    /// The list without anything in flight: content never `loading`, no next page loading.
    @usableFromInline var settled: ListState<Item>
    @usableFromInline var settledRank: UInt64 = 0
    @usableFromInline var shown: (first: Bool, next: Bool) = (false, false)
    /// Changes whenever a first page replaces the list.
    @usableFromInline var epoch: UInt64 = 0
    @usableFromInline var nextKey: PageKey?
    /// The keys loaded into this list, to stop a pagination cycle.
    @usableFromInline var loadedKeys: [PageKey] = []
    @usableFromInline var index = ItemIndex<Item.ID>()
    @usableFromInline var changes: [Item.ID: (rank: UInt64, change: Change)] = [:]
    @usableFromInline var book = OperationBook<Outcome, Context, Kind>()
    @usableFromInline var joinableFirst: OperationID?
    @usableFromInline var nextPage: OperationID?
    /// Whether the list is in a store: it then tells the store what it learns, and ranks each item.
    @usableFromInline let isShared: Bool
    /// The rank of what the list shows for each item, in a store: news older than it is ignored.
    @usableFromInline var itemRanks: [Item.ID: UInt64] = [:]
    /// Optimistic changes shown over items, oldest first per item.
    @usableFromInline var layers: [Item.ID: [ListLayer<Item>]] = [:]
    /// Items another holder's news removed while an optimistic change showed over them: kept where they are,
    /// under the change, until their last change ends (``settleRemovals()``), as a resource keeps showing its
    /// change over a pushed deletion.
    @usableFromInline var removedUnderLayers: Set<Item.ID> = []
    /// How many layers were added: each layer's `order`.
    @usableFromInline var layerCount: UInt64 = 0
    @usableFromInline var news: [ItemNews<Item, Item.ID>] = []
    /// When the oldest page the list shows was loaded (its first page), on the session's timeline: its age in a
    /// store's snapshot, and, for a list whose items are whole values (``Listable/itemsAreComplete``), how
    /// fresh a store's resource made from one of them starts. `nil` once invalidated.
    @usableFromInline var loadedAt: Duration?

    init(state: ListState<Item>, firstPageKey: PageKey, isShared: Bool = false) {
        self.isShared = isShared
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

    @usableFromInline var waitingCallerCount: Int { book.waitingCallerCount }

    // MARK: Asking

    @inlinable mutating func askFirstPage(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, key: PageKey, ranks: inout Ranks,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        if let id = joinableFirst, book.operations[id] != nil {
            book.join(id, call, waiter, ranks: &ranks)
        } else {
            joinableFirst = book.start(
                .first(key), call, waiter, context: .page(key), work: work, into: &effects, ranks: &ranks)
        }
        publish(settledChanged: false)
        return effects
    }

    @inlinable mutating func askNextPage(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, firstPageKey: PageKey, ranks: inout Ranks,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        // With no list yet, a list about to be replaced, or one made in a fixed state (whose next key is
        // unknown), the next page is the first page.
        let isUnknownNext = settled.pagination.hasMore && nextKey == nil
        if settled.pagination.pagesLoaded == 0 || isFirstPageWanted || isUnknownNext {
            return askFirstPage(call, waiter, key: firstPageKey, ranks: &ranks, work: work)
        }
        var effects = Effects.none
        guard settled.pagination.hasMore, let key = nextKey else {
            effects.resume(waiter, with: .success(.unchanged))
            return effects
        }
        if let id = nextPage, book.operations[id] != nil {
            book.join(id, call, waiter, ranks: &ranks)
        } else {
            nextPage = book.start(
                .next(key, epoch: epoch), call, waiter, context: .page(key), work: work, into: &effects,
                ranks: &ranks)
        }
        publish(settledChanged: false)
        return effects
    }

    /// A create, update or delete; `optimistic` is shown over its item at once, until the mutation ends. A
    /// create's (`creating`) is shown at the end of the list, as its answer will be, and in the store's other
    /// lists where their placement of created items says.
    mutating func askMutation(
        _ call: CallID, _ waiter: OperationWaiter<Outcome>, optimistic: (id: Item.ID, fact: ItemFact<Item>)? = nil,
        creating: Bool = false, ranks: inout Ranks, work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        var layer: (token: LayerToken, id: Item.ID)?
        var shows = false
        if let optimistic {
            let token = LayerToken()
            layer = (token, optimistic.id)
            let place: ListPlacement = creating && optimistic.fact.value != nil ? .end : .omitted
            shows = addLayer(ListLayer(token: token, fact: optimistic.fact, place: place), of: optimistic.id)
            if isShared { news.append(.layer(optimistic.id, token: token, optimistic.fact, created: creating)) }
        }
        book.enqueueSerial(
            .mutation(layer: layer), call, waiter, context: .mutation, work: work, into: &effects, ranks: &ranks)
        if shows { publish(settledChanged: true) }
        return effects
    }

    // MARK: Events

    @usableFromInline mutating func cancel(_ call: CallID) -> Effects {
        var effects = Effects.none
        var layerEnded = false
        switch book.leave(call, into: &effects) {
        case .abandoned(let id, let operation):
            forgetInFlight(id, operation)
            if case .mutation(let layer) = operation.kind { layerEnded = endLayer(layer, telling: true) }
        case .dropped(let operation):
            if case .mutation(let layer) = operation.kind { layerEnded = endLayer(layer, telling: true) }
        case .none, .stillWanted: break
        }
        publish(settledChanged: layerEnded)
        return effects
    }

    @usableFromInline mutating func begin(_ id: OperationID, ranks: inout Ranks) -> (shouldRun: Bool, effects: Effects)
    {
        switch book.begin(id, ranks: &ranks) {
        case nil: (false, .none)
        case false?: (false, finish(id, with: .failure(.cancelled), ranks: &ranks, now: nil))
        case true?: (true, .none)
        }
    }

    @usableFromInline mutating func attach(_ task: Task<Void, Never>, to id: OperationID) -> Effects {
        var effects = Effects.none
        book.attach(task, to: id, into: &effects)
        return effects
    }

    @inlinable mutating func finish(
        _ id: OperationID, with result: Result<Outcome, NetworkError>, ranks: inout Ranks, now: Duration?
    ) -> Effects {
        var effects = Effects.none
        guard var operation = book.finish(id, into: &effects, ranks: &ranks) else { return effects }
        if joinableFirst == id { joinableFirst = nil }
        if nextPage == id { nextPage = nil }
        var settledChanged = false
        var answer = result
        if !operation.callers.isEmpty {
            switch operation.kind {
            case .first(let key):
                let rank = operation.callers.rank
                if rank > settledRank {
                    switch result {
                    case .success(.page(let page)):
                        replaceList(with: page, key: key, sentAt: operation.sentAt, now: now, into: &effects)
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
            case .mutation(let layer):
                // Confirmed or rolled back, the optimistic change ends with its mutation, in this transition.
                settledChanged = endLayer(layer, telling: true)
                if case .success(let outcome) = result {
                    settledChanged = apply(outcome, ranks: &ranks) || settledChanged
                }
            }
            operation.callers.resumeAll(with: answer, into: &effects)
        }
        // A refresh asked from now on must see what a mutation did on the server. (An abandoned mutation did
        // this when it was abandoned.)
        if operation.isSerial, !operation.isAbandoned { joinableFirst = nil }
        forgetSettledChanges()
        publish(settledChanged: settledChanged)
        return effects
    }

    // MARK: Applying answers

    @inlinable var isFirstPageWanted: Bool {
        book.operations.values.contains { if case .first = $0.kind { !$0.callers.isEmpty } else { false } }
    }

    /// An operation that nobody waits for any more is no longer joined.
    mutating func forgetInFlight(_ id: OperationID, _ operation: Operation) {
        if joinableFirst == id || operation.isSerial { joinableFirst = nil }
        if nextPage == id { nextPage = nil }
    }

    @inlinable mutating func rebuildIndex() {
        index = ItemIndex()
        let items = settled.content.value ?? []
        index.reserve(items.count, in: items)
        for (position, item) in items.enumerated() where index.position(of: item.id, in: items) == nil {
            index.insert(item.id, at: position, in: items)
        }
    }

    /// Where the settled items hold `id`.
    ///
    /// Always inlined: called from a mutating method, an outlined call took a copy of the whole machine (some
    /// 350 bytes) for its `self`, on every item of every news a list hears.
    @inlinable @inline(__always) func position(of id: Item.ID) -> Int? {
        switch settled.content {
        case .available(let items), .failure(_, let items?): index.position(of: id, in: items)
        case .idle, .loading, .failure(_, nil): nil
        }
    }

    /// Recomputes what observers see from the settled list and what is in flight.
    @inlinable mutating func publish(settledChanged: Bool) {
        // Every transition ends here: a removal held under changes that all ended now shows.
        let settledChanged = removedUnderLayers.isEmpty ? settledChanged : settleRemovals() || settledChanged
        var firstRank: UInt64 = 0
        var next = false
        // With nothing in flight (news from the store, mostly), the operations' storage is not touched.
        if book.operationCount > 0 {
            for operation in book.operations.values {
                if case .first = operation.kind { firstRank = max(firstRank, operation.callers.rank) }
            }
            next = nextPage.flatMap { book.operations[$0] }.map { !$0.isAbandoned } ?? false
        }
        let first = firstRank > settledRank
        guard settledChanged || first != shown.first || next != shown.next else { return }
        shown = (first, next)
        redisplay()
        version &+= 1
    }

    /// Makes what observers see again, in place: the settled list, what is in flight, and the optimistic
    /// changes over it. (A function that returned the state took a copy of the whole machine for its `self`,
    /// since its result was stored into the machine.)
    @inlinable mutating func redisplay() {
        let (first, next) = shown
        state = settled
        if next {
            state.pagination.isLoadingNextPage = true
            state.pagination.nextPageError = nil
            if case .failure(_, let previous) = state.content { state.content = .available(previous ?? []) }
        }
        if first { state.content = .loading(previous: settled.content.value) }
        if !layers.isEmpty {
            let content = state.content.map(overlaid)
            state.content = content
        }
    }
}
