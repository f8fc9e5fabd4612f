// `@inlinable` over `@usableFromInline package internal` declarations, so that a client specializes the read path
// for its own types (unspecialized, it spends its time in generic metadata lookups): this makes them part
// of the module's API surface, and a change to them a change clients compile against.

/// What an operation did to a resource's value.
@usableFromInline enum ResourceOutcome<Value: Sendable>: Sendable, HandedOffOutcome {
    case value(Value)
    /// A read's value with the validators its response carried (or, after a `304`, the value kept).
    case validated(Value, Validators)
    case removed
    /// A change handed to a store extension that shows it until it settles (the outbox keeps it): nothing
    /// settles now. Its caller returns what the change shows, or throws the error when it shows nothing.
    case handedOff(NetworkError)

    @inlinable var value: Value? {
        switch self {
        case .value(let value), .validated(let value, _): value
        case .removed, .handedOff: nil
        }
    }

    /// Whether the outcome is the server's answer, to land.
    @inlinable var isAnswer: Bool {
        if case .handedOff = self { false } else { true }
    }
}

/// The state machine of one ``Resource``.
///
/// Every caller gets a rank, the "asked at" sequence number. An answer stands for its newest caller's rank
/// (a mutation's for the moment it completed) and lands only when it is newer than the answer shown, so:
/// - the state is `loading` exactly while a caller newer than the shown answer waits;
/// - a caller that leaves counts as never having asked, and the state is what it would have been;
/// - an answer older than a completed mutation never lands over it, and no read asked after a mutation
///   completed joins a read sent before it.
@usableFromInline struct ResourceMachine<Value: Sendable>: OperationMachine {
    @usableFromInline typealias Outcome = ResourceOutcome<Value>
    /// A read's work is given the value it may keep on a `304 Not Modified`.
    @usableFromInline typealias Context = KeptValue<Value>?

    /// An optimistic change shown over the settled value.
    @usableFromInline struct Layer {
        @usableFromInline var token: LayerToken
        @usableFromInline var fact: ItemFact<Value>

        @inlinable init(token: LayerToken, fact: ItemFact<Value>) {
            self.token = token
            self.fact = fact
        }
    }

    @usableFromInline enum Kind {
        case read(RequestKey?)
        /// A create, update or delete; `layer` names its optimistic change.
        case mutation(layer: LayerToken?, creates: Bool)
    }

    /// What a store and the freshness policies need to know; absent for a resource made on its own.
    @usableFromInline struct Sharing {
        /// The read that loads this resource's item: every value it holds is that item's.
        @usableFromInline var key: RequestKey?
        /// Whether news goes to a store.
        @usableFromInline var publishes: Bool

        @inlinable init(key: RequestKey?, publishes: Bool) {
            self.key = key
            self.publishes = publishes
        }
    }

    @usableFromInline var state: ResourceState<Value>
    @usableFromInline var version: UInt64 = 0
    /// The newest answer that landed (or the initial state), and its rank.
    @usableFromInline var settled: ResourceState<Value>
    @usableFromInline var settledRank: UInt64 = 0
    /// The rank of the value in `settled` (its `previous` when it is a failure). A failure changes no value
    /// on the server, so it leaves this rank as it was: an answer older than the failure but newer than the
    /// value it keeps is what the resource would show without the failed operation, and becomes its
    /// `previous`. Below `settledRank` only while `settled` is a failure.
    @usableFromInline var valueRank: UInt64 = 0
    /// The read whose answer is `settled`, for ``ReadPolicy/skipIfLoaded``. A store's resource keeps it through
    /// its own mutations and news from other holders, which keep the item it loaded current.
    @usableFromInline var loadedKey: RequestKey?
    @usableFromInline var isShowingLoading: Bool
    /// Changes whenever `settled` does.
    @usableFromInline var settledGeneration: UInt64 = 0
    /// What the shown state was made of: the optimistic change on top, or else the settled state's
    /// generation. While a change is on top, settled answers underneath do not show.
    @usableFromInline var shownLayer: LayerToken?
    @usableFromInline var shownGeneration: UInt64 = 0
    @usableFromInline var book = OperationBook<Outcome, Context, Kind>()
    /// Reads in flight that a new caller may join.
    @usableFromInline var joinable: [RequestKey: OperationID] = [:]
    /// When the settled value was last known fresh (a landed answer or news), on the session's timeline;
    /// `nil` once invalidated.
    @usableFromInline var loadedAt: Duration?
    /// The validators of the settled value, for a conditional read of `loadedKey`.
    @usableFromInline var validators: Validators?
    /// Optimistic changes shown over the settled state, oldest first: the newest one is what observers see.
    @usableFromInline var layers: [Layer] = []
    @usableFromInline let sharing: Sharing?
    /// News for the store, taken after every transition.
    @usableFromInline var news: [ResourceNews<Value>] = []

    @inlinable init(
        state: ResourceState<Value>, sharing: Sharing? = nil, settledRank: UInt64 = 0,
        loadedAt: Duration? = nil, validators: Validators? = nil, loadedKey: RequestKey? = nil
    ) {
        self.sharing = sharing
        self.settledRank = settledRank
        valueRank = settledRank
        self.loadedAt = loadedAt
        self.validators = validators
        self.loadedKey = loadedKey
        self.state = state
        isShowingLoading = state.isLoading
        // A resource made in `.loading` for a preview settles on its previous value when an operation ends.
        settled = if case .loading(let previous) = state { previous.map { .available($0) } ?? .idle } else { state }
    }

    @inlinable var waitingCallerCount: Int { book.waitingCallerCount }

    // MARK: Asking

    @inlinable mutating func askRead(
        _ call: CallID,
        _ waiter: OperationWaiter<Outcome>,
        key: RequestKey?,
        policy: ReadPolicy,
        ranks: inout Ranks,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        if policy == .skipIfLoaded, let key, loadedKey == key, case .available(let value) = state {
            effects.resume(waiter, with: .success(.value(value)))
            return effects
        }
        if let key, let id = joinable[key], book.operations[id] != nil {
            book.join(id, call, waiter, ranks: &ranks)
        } else {
            let id = book.start(
                .read(key), call, waiter, context: conditionalBase(for: key), work: work, into: &effects,
                ranks: &ranks)
            if let key { joinable[key] = id }
        }
        publish(settledChanged: false)
        return effects
    }

    /// A create, update or delete; `optimistic` is shown at once, until the mutation ends.
    mutating func askMutation(
        _ call: CallID,
        _ waiter: OperationWaiter<Outcome>,
        optimistic: ItemFact<Value>? = nil,
        creates: Bool = false,
        ranks: inout Ranks,
        work: @escaping OperationWork<Outcome, Context>
    ) -> Effects {
        var effects = Effects.none
        var token: LayerToken?
        if let optimistic {
            let layer = LayerToken()
            token = layer
            layers.append(Layer(token: layer, fact: optimistic))
            tell(.layer((), token: layer, optimistic))
        }
        book.enqueueSerial(
            .mutation(layer: token, creates: creates), call, waiter, context: nil, work: work, into: &effects,
            ranks: &ranks)
        publish(settledChanged: token != nil)
        return effects
    }

    // MARK: Events

    @inlinable mutating func cancel(_ call: CallID) -> Effects {
        var effects = Effects.none
        var layerEnded = false
        switch book.leave(call, into: &effects) {
        case .abandoned(let id, let operation):
            switch operation.kind {
            case .read(let key?) where joinable[key] == id: joinable[key] = nil
            // A mutation may already have reached the server: reads sent before it are not joined again.
            case .mutation(let layer, _):
                joinable.removeAll()
                layerEnded = removeLayer(layer)
            default: break
            }
        case .dropped(let operation):
            if case .mutation(let layer, _) = operation.kind { layerEnded = removeLayer(layer) }
        case .none, .stillWanted: break
        }
        publish(settledChanged: layerEnded)
        return effects
    }

    @inlinable mutating func begin(_ id: OperationID, ranks: inout Ranks) -> (shouldRun: Bool, effects: Effects) {
        switch book.begin(id, ranks: &ranks) {
        case nil: return (false, .none)
        case false?: return (false, finish(id, with: .failure(.cancelled), ranks: &ranks, now: nil))
        case true?:
            publish(settledChanged: false)
            return (true, .none)
        }
    }

    @inlinable mutating func attach(_ task: Task<Void, Never>, to id: OperationID) -> Effects {
        var effects = Effects.none
        book.attach(task, to: id, into: &effects)
        return effects
    }

    @inlinable mutating func finish(
        _ id: OperationID, with result: Result<Outcome, NetworkError>, ranks: inout Ranks, now: Duration?
    ) -> Effects {
        var effects = Effects.none
        // A mutation's answer is as new as its completion: every read asked before it is older, and the next
        // mutation, whose turn comes now, is newer.
        let completion = ranks.draw()
        guard var operation = book.finish(id, into: &effects, ranks: &ranks) else { return effects }
        var settledChanged = false
        let key: RequestKey?
        var creates = false
        switch operation.kind {
        case .read(let readKey): key = readKey
        case .mutation(let layer, let isCreate):
            key = nil
            creates = isCreate
            // Confirmed or rolled back, the optimistic change ends with its mutation, in this transition.
            settledChanged = removeLayer(layer)
        }
        if let key, joinable[key] == id { joinable[key] = nil }
        if !operation.callers.isEmpty {
            let rank = operation.isSerial ? completion : operation.callers.rank
            if rank > settledRank, let landed = settledState(after: result) {
                settled = landed
                settledRank = rank
                if case .success = result {
                    // A store's resource holds one item: its own change keeps that item loaded.
                    if !operation.isSerial { loadedKey = key } else if sharing == nil { loadedKey = nil }
                } else {
                    loadedKey = nil
                }
                if case .success(let outcome) = result {
                    valueRank = rank
                    land(outcome, rank: rank, created: creates, now: now)
                }
                settledChanged = true
            } else if rank > valueRank, case .success(let outcome) = result, outcome.isAnswer,
                case .failure(let error, _) = settled
            {
                // Older than a failure, newer than the value the failure keeps.
                settled = .failure(error, previous: outcome.value)
                valueRank = rank
                land(outcome, rank: rank, created: creates, now: now)
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

    /// Whether the settled value is the answer of `key` for freshness: loaded by it, or, for a store's
    /// resource, any value of its item (another holder's copy included).
    @inlinable func holdsAnswer(of key: RequestKey) -> Bool {
        loadedKey == key || (sharing?.key == key && settled.value != nil)
    }

    /// Records what a landed answer means for freshness, validators and the store.
    @inlinable mutating func land(_ outcome: Outcome, rank: UInt64, created: Bool, now: Duration?) {
        // A deletion leaves no value whose age could be told.
        if case .removed = outcome { loadedAt = nil } else { loadedAt = now }
        if case .validated(_, let answerValidators) = outcome {
            validators = answerValidators
        } else {
            validators = nil
        }
        switch outcome {
        case .value(let value): tell(.fact((), .value(value), rank: rank, created: created))
        case .validated(let value, let validators):
            tell(.fact((), .value(value), rank: rank, created: created, validators: validators))
        case .removed: tell(.fact((), .removed, rank: rank))
        case .handedOff: break
        }
    }

    /// Gathers news for the store; a resource outside a store does not even make it.
    @inlinable mutating func tell(_ item: @autoclosure () -> ResourceNews<Value>) {
        if sharing?.publishes == true { news.append(item()) }
    }

    /// Ends an optimistic change; returns whether one ended.
    @inlinable mutating func removeLayer(_ token: LayerToken?) -> Bool {
        token?.end()
        guard let token, let position = layers.firstIndex(where: { $0.token == token }) else { return false }
        layers.remove(at: position)
        tell(.unlayer((), token: token))
        return true
    }

    @inlinable func settledState(after result: Result<Outcome, NetworkError>) -> ResourceState<Value>? {
        switch result {
        case .success(.value(let value)), .success(.validated(let value, _)): .available(value)
        case .success(.removed): .idle
        // Handed off (kept in the store's outbox): its layer shows the change, and the settled value is still
        // the server's.
        case .success(.handedOff): nil
        case .failure(.cancelled): nil
        case .failure(let error): .failure(error, previous: settled.value)
        }
    }

    /// Recomputes what observers see: `loading` while a caller newer than the settled answer waits, and the
    /// newest optimistic change over the settled value.
    @inlinable mutating func publish(settledChanged: Bool) {
        var newest: UInt64 = 0
        for operation in book.operations.values { newest = max(newest, operation.callers.rank) }
        let loading = newest > settledRank
        if settledChanged { settledGeneration &+= 1 }
        let top = layers.last?.token
        let generation = top == nil ? settledGeneration : 0
        guard top != shownLayer || generation != shownGeneration || loading != isShowingLoading else { return }
        shownLayer = top
        shownGeneration = generation
        isShowingLoading = loading
        switch layers.last?.fact {
        case nil: state = loading ? .loading(previous: settled.value) : settled
        case .value(let value)?: state = loading ? .loading(previous: value) : .available(value)
        case .removed?: state = loading ? .loading(previous: nil) : .idle
        }
        version &+= 1
    }
}
