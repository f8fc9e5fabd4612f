import Synchronization

/// What a module adds to a store from beside it (ResourceKitPersistence: values kept between runs, and the
/// outbox): the store calls these at fixed points of a holder's life and knows nothing else of what they do.
///
/// The calls come in this order for a holder the store makes: `restored…` (outside the registry's lock, only
/// when nothing in memory holds the item or the request), `extend` (under it, before the holder exists),
/// `shownChanges` (after the lock, once the holder is registered). An extension trades values with the store
/// and keeps no holder: the store's links hold what it adds, and the store holds its holders weakly.
package protocol StoreExtension: Sendable {
    /// Called once, from the store's initializer, before the store makes any holder.
    func attach(to store: ResourceStore)

    /// The value a new resource of item `id` starts from, when nothing in memory has the item.
    func restoredValue<Remote: Readable>(of type: Remote.Type, id: Remote.Value.ID, store: ResourceStore)
        -> RestoredValue<Remote.Value>?
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID

    /// What the extension runs for a resource of item `id`: after the server's value of the item changed, and
    /// around its changes.
    func extend<Remote: Readable>(_ type: Remote.Type, id: Remote.Value.ID, store: ResourceStore)
        -> HolderHooks<Resource<Remote>>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID

    /// The changes the extension shows (``ResourceStore/show(_:)``) of item `id` of `Item`, or of every item of
    /// the type when `id` is `nil`, oldest first: what a resource or list made now shows over its items.
    func shownChanges<Item: Identifiable & Sendable>(of type: Item.Type, id: Item.ID?) -> [ShownChange<Item>]
    where Item.ID: Sendable

    /// The items a new list for the request named `request` starts from, and when they were loaded on the
    /// session's clock, when no live list has the request.
    func restoredItems<Remote: Listable>(of type: Remote.Type, request: String, store: ResourceStore)
        -> (items: [Remote.Item], loadedAt: Duration?)?

    /// What the extension runs for the list of the request named `request`: after the items it shows may have
    /// changed, and around its changes.
    func extend<Remote: Listable>(_ type: Remote.Type, request: String, store: ResourceStore)
        -> HolderHooks<ListResource<Remote>>

    /// The server's push changed item `id` of `Remote` (``ResourceStore/apply(_:as:)``); `isHeld` says
    /// whether a live resource of the type holds it.
    func pushed<Remote: RemoteResource>(_ type: Remote.Type, id: some Hashable & Sendable, isHeld: Bool)

    /// The store was wiped (``ResourceStore/wipe()``): forget everything kept.
    func wipe() async throws(NetworkError)
}

/// Defaults that add nothing: an extension implements only the points it needs.
extension StoreExtension {
    package func attach(to store: ResourceStore) {}

    package func restoredValue<Remote: Readable>(of type: Remote.Type, id: Remote.Value.ID, store: ResourceStore)
        -> RestoredValue<Remote.Value>?
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID { nil }

    package func extend<Remote: Readable>(
        _ type: Remote.Type, id: Remote.Value.ID, store: ResourceStore
    ) -> HolderHooks<Resource<Remote>>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID { .init() }

    package func shownChanges<Item: Identifiable & Sendable>(of type: Item.Type, id: Item.ID?) -> [ShownChange<Item>]
    where Item.ID: Sendable { [] }

    package func restoredItems<Remote: Listable>(of type: Remote.Type, request: String, store: ResourceStore)
        -> (items: [Remote.Item], loadedAt: Duration?)?
    { nil }

    package func extend<Remote: Listable>(
        _ type: Remote.Type, request: String, store: ResourceStore
    ) -> HolderHooks<ListResource<Remote>> { .init() }

    package func pushed<Remote: RemoteResource>(_ type: Remote.Type, id: some Hashable & Sendable, isHeld: Bool) {}

    package func wipe() async throws(NetworkError) {}
}

/// What a store extension runs for one holder, a resource or a list: the value its `extend` hands the store,
/// which keeps it in the holder's link.
package struct HolderHooks<Holder: AnyObject & Sendable>: Sendable {
    /// Runs after the server's value of the holder's items may have changed (persistence queues what the holder
    /// shows). `removed` is whether the server removed a resource's item; a list passes `false`.
    let afterChange: (@Sendable (Holder, _ removed: Bool) -> Void)?
    /// What runs the holder's changes (the outbox): it sends each, or keeps it for later.
    let mutations: (any MutationWrapping)?

    /// Hooks that run `afterChange` and wrap the changes in `mutations`; with neither, the extension adds
    /// nothing to the holder.
    package init(
        afterChange: (@Sendable (Holder, _ removed: Bool) -> Void)? = nil, mutations: (any MutationWrapping)? = nil
    ) {
        self.afterChange = afterChange
        self.mutations = mutations
    }

    /// These hooks, then `later`'s: both run after a change, and `later`'s wrapper, if it has one, runs the
    /// changes.
    func then(_ later: Self) -> Self {
        guard let first = afterChange, let second = later.afterChange else {
            return Self(afterChange: afterChange ?? later.afterChange, mutations: later.mutations ?? mutations)
        }
        return Self(
            afterChange: { holder, removed in
                first(holder, removed)
                second(holder, removed)
            },
            mutations: later.mutations ?? mutations)
    }
}

/// A value an extension kept of an item (persistence: from an earlier run), and what it knows of it: what a new
/// resource of the item starts from.
package struct RestoredValue<Value: Sendable>: Sendable {
    /// The value.
    var value: Value
    /// How long ago it was loaded; `nil` when it is to be read again before it counts as fresh.
    var age: Duration?
    /// The validators of the value itself, which a conditional read sends.
    var validators: Validators?
    /// What was known of the item's version (``KnownVersions``): the value's own validators, or an earlier
    /// version's, which a change of it is made on.
    var knownValidators: Validators?

    package init(value: Value, age: Duration?, validators: Validators?, knownValidators: Validators?) {
        self.value = value
        self.age = age
        self.validators = validators
        self.knownValidators = knownValidators ?? validators
    }
}

/// Which change a mutation makes.
package enum MutationKind: Sendable {
    case create, update, delete
}

/// What the server had of an item when a change of it was made: the validators and the version of the value
/// the holder showed as the server's (never an optimistic one).
package struct MutationBase: Sendable {
    /// The validators a conditional change sends.
    package var validators: Validators?
    package var version: ItemVersion?
    /// The value itself (`Value`, boxed): what a three-way merge starts from.
    package var value: (any Sendable)?

    /// The base, or `nil` when nothing is known of the value.
    init?(validators: Validators?, version: ItemVersion?, value: (any Sendable)? = nil) {
        guard validators != nil || version != nil || value != nil else { return nil }
        self.validators = validators
        self.version = version
        self.value = value
    }
}

/// What a change's wrapper did with it: sent it, with the server's answer, or kept it for later (the change
/// shows, and settles when it is sent), with the error its caller throws if the change shows nothing.
@usableFromInline package enum MutationResult<Outcome> {
    case sent(Outcome)
    case kept(NetworkError)
}

/// Runs a resource's or list's changes from beside the core: the outbox sends each, and keeps it when the
/// server cannot be reached. A holder without a wrapper sends its changes itself.
package protocol MutationWrapping: Sendable {
    /// The same wrapper for a change of item `id` of a list.
    func item(_ id: AnyHashable) -> any MutationWrapping
    /// The same wrapper for a create of a list: no item yet.
    var creating: any MutationWrapping { get }

    /// Sends the change with `send`, or keeps it.
    /// - Parameters:
    ///   - kind: The change.
    ///   - value: What holders show of the item meanwhile (an optimistic value), if anything.
    ///   - shownID: The id of the item a create shows meanwhile.
    ///   - base: What the server had of the item when the change was made, when something is known of it.
    ///   - endpoint: The change's request.
    ///   - session: The session that sends it.
    ///   - send: Sends an endpoint (the wrapper may add headers to it).
    func run<Outcome>(
        _ kind: MutationKind, showing value: (any Sendable)?, shownID: AnyHashable?, base: MutationBase?,
        _ endpoint: Endpoint, _ session: NetworkSession, _ send: (Endpoint) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> MutationResult<Outcome>
}

/// An extension's wrapper of a holder's changes while the store has not been wiped since the holder was made. A
/// holder from before the last wipe (an old screen of the previous user) sends its changes itself: they go to
/// the server or fail, and never reach what the extension keeps after the wipe (the outbox), to be sent later
/// with someone else's credentials.
struct UnlessWiped: MutationWrapping {
    let wrapped: any MutationWrapping
    let store: ResourceStore
    /// The store's wipe count when the holder was made.
    let born: UInt64

    func item(_ id: AnyHashable) -> any MutationWrapping {
        UnlessWiped(wrapped: wrapped.item(id), store: store, born: born)
    }

    var creating: any MutationWrapping { UnlessWiped(wrapped: wrapped.creating, store: store, born: born) }

    func run<Outcome>(
        _ kind: MutationKind, showing value: (any Sendable)?, shownID: AnyHashable?, base: MutationBase?,
        _ endpoint: Endpoint, _ session: NetworkSession, _ send: (Endpoint) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> MutationResult<Outcome> {
        guard store.wipes.load(ordering: .acquiring) == born else { return .sent(try await send(endpoint)) }
        return try await wrapped.run(kind, showing: value, shownID: shownID, base: base, endpoint, session, send)
    }
}

/// What a change of a holder can end in when a wrapper keeps it instead of sending it.
protocol HandedOffOutcome {
    /// The change was kept for later (the outbox): nothing settles now, and the error says why.
    static func handedOff(_ error: NetworkError) -> Self
}

extension Optional where Wrapped == any MutationWrapping {
    /// Sends a change of a resource or a list: the one place a change meets the store extension that wraps it.
    ///
    /// With a wrapper (the outbox), the wrapper sends it with `send` or keeps it, and a kept change ends as
    /// `handedOff`; without one, `send` sends it straight to the server, with no frame of the wrapper's.
    /// - Parameters:
    ///   - kind: The change.
    ///   - value: What holders show of the item meanwhile (an optimistic value), if anything.
    ///   - shownID: The id of the item a create shows meanwhile.
    ///   - base: What the server had of the item when the change was made; asked only of a wrapper's change.
    ///   - endpoint: The change's request.
    ///   - session: The session that sends it.
    ///   - send: Sends an endpoint and makes the outcome of its answer.
    /// - Returns: The outcome: the server's answer, or `handedOff`.
    // Always inlined: a frame of its own costs a change without a wrapper an allocation (a task-allocator slab).
    @inline(__always) func send<Outcome: HandedOffOutcome>(
        _ kind: MutationKind, showing value: (any Sendable)? = nil, shownID: AnyHashable? = nil,
        base: () -> MutationBase?, _ endpoint: Endpoint, _ session: NetworkSession,
        _ send: (Endpoint) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> Outcome {
        guard let self else { return try await send(endpoint) }
        switch try await self.run(kind, showing: value, shownID: shownID, base: base(), endpoint, session, send) {
        case .sent(let outcome): return outcome
        case .kept(let error): return .handedOff(error)
        }
    }
}
