public import Observation

/// A paginated remote list: its items, its pagination, and the operations that change them.
///
/// Like ``Resource`` it is `Sendable`, readable synchronously (``state``, ``listState``), observable with
/// ``states`` and with Observation. Made on its own, it shares nothing with other lists or resources; made
/// by a ``ResourceStore``, it shows what every other holder of its items learns, and tells them what it
/// learns (see <doc:OneSourceOfTruth>).
///
/// - ``loadFirstPage()`` and ``refresh()`` replace the list when the new first page arrives; the old items
///   stay visible meanwhile, and a cancelled refresh leaves the list exactly as it would be without it.
/// - ``loadNextPage()`` appends the next page. Concurrent calls share one request, so no page is fetched
///   twice; at the end of the list it does nothing. A failed page keeps every loaded item, and the next call
///   retries it. A next page still in flight when a refresh's first page arrives is dropped, and its callers
///   get ``NetworkError/superseded``.
/// - ``create(_:)``, ``update(_:)`` and ``delete(_:)`` run in call order and change the one item by id. A page
///   that was sent before a mutation completed cannot undo it.
/// - Items are de-duplicated by `id` across pages.
public final class ListResource<Remote: Listable>: Sendable, Observable {
    /// The item type.
    public typealias Item = Remote.Item

    /// How news from other holders of its items reaches a store's list (`nil` outside a store), and what a store
    /// extension runs after it. Read for every list one update reaches, so kept in the list itself, ahead of the
    /// fields whose place depends on the generic types: behind `heldLink`, each list cost one more object loaded
    /// from memory, most often a cache miss.
    let hearNews: (@Sendable (ListResource, any Sendable) -> Void)?
    let afterNews: (@Sendable (ListResource, _ removed: Bool) -> Void)?

    /// The session that sends the requests.
    public let session: NetworkSession
    /// What selects the list.
    public let request: Remote.ListRequest
    /// Made by the first diagnostic event about the object.
    @usableFromInline let diagnosticSubjectSlot = DiagnosticSubjectSlot()

    // `@usableFromInline`: they meet requirements of `MachineHost`, whose core is inlinable for the read path
    // of `Resource` (see MachineHost.swift); that makes them part of the module's API surface.
    @usableFromInline let storage: Locked<HostStorage<ListMachine<Item, Remote.Pagination.PageKey>>>
    @usableFromInline let registrar = ObservationRegistrar()
    /// Formed once per type (see `observedKeyPaths(of:_:)`).
    @usableFromInline let keyPaths: HostKeyPaths<ListResource, ListState<Item>>
    /// The store this list belongs to, if a store made it: held by reference, so that news reaching the list
    /// reads the one closure it needs instead of copying (and retaining) every closure of the link.
    let heldLink: Held<ListLink<Remote>>?
    /// The link, copied whole: for paths that run once per list or per change, not once per news.
    var link: ListLink<Remote>? { heldLink?.value }
    /// The pages loaded with validators: loading one again asks the server for it only if it changed.
    let pageMemo = PageMemo<Item, Remote.Pagination.PageKey>()

    /// Creates a list.
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - request: What selects the list.
    ///   - state: The initial state, for tests and previews; `.idle` by default.
    public init(session: NetworkSession, request: Remote.ListRequest, state: ListState<Item> = ListState()) {
        self.session = session
        self.request = request
        self.storage = Locked(HostStorage(ListMachine(state: state, firstPageKey: Remote.pagination.firstPageKey)))
        keyPaths = observedKeyPaths(of: ListResource.self) {
            HostKeyPaths(state: \.listState, callers: \.waitingCallerCount, observers: \.observerCount)
        }
        self.heldLink = nil
        hearNews = nil
        afterNews = nil
    }

    init(session: NetworkSession, request: Remote.ListRequest, state: ListState<Item>, link: ListLink<Remote>) {
        self.session = session
        self.request = request
        self.storage = Locked(
            HostStorage(ListMachine(state: state, firstPageKey: Remote.pagination.firstPageKey, isShared: true)))
        keyPaths = observedKeyPaths(of: ListResource.self) {
            HostKeyPaths(state: \.listState, callers: \.waitingCallerCount, observers: \.observerCount)
        }
        self.heldLink = Held(link)
        hearNews = link.hear
        afterNews = link.afterNews
    }

    /// Creates a list in a fixed state with no network, for previews.
    /// - Parameters:
    ///   - request: What selects the list.
    ///   - state: The state.
    public convenience init(request: Remote.ListRequest, state: ListState<Item>) {
        self.init(session: .offline, request: request, state: state)
    }

    deinit {
        finishObservers()
        link?.release(ObjectIdentifier(self))
    }

    /// The items' state.
    public var state: ResourceState<[Item]> { listState.content }

    /// The pagination status.
    public var pagination: PaginationStatus { listState.pagination }

    /// The items known now.
    public var items: [Item] { listState.items }

    /// Items and pagination together, read at one instant.
    public var listState: ListState<Item> {
        observedState
    }

    /// A new stream of list states: first the current one, then every change in order
    /// (``StateBuffering/everyChange``).
    @inlinable public var states: AsyncStream<ListState<Item>> { makeStateStream(buffering: .everyChange) }

    /// A new stream of list states with the given buffering.
    ///
    /// A consumer that falls behind on an ``StateBuffering/everyChange`` stream holds every list state it has
    /// not read, each with its own copy of the items; a screen should use ``StateBuffering/latest``.
    /// - Parameter buffering: Whether an unread stream keeps every change or only the newest state.
    /// - Returns: The stream.
    @inlinable public func states(buffering: StateBuffering) -> AsyncStream<ListState<Item>> {
        makeStateStream(buffering: buffering)
    }

    /// How many `states` streams are registered. Observation tracks it, as it does the state: a view or a
    /// test can wait for a stream to register or go away.
    public var observerCount: Int { registeredObserverCount }

    /// Whether the items shown came from the store's persistence (an earlier run), rather than from a page
    /// of this run: `true` from the list's creation until its first page arrives.
    public var isRestored: Bool {
        guard link?.isRestored == true else { return false }
        return storage.withLock { $0.machine.epoch == 0 && $0.machine.settled.content.value != nil }
    }

    /// How long ago the restored items were loaded: the wall-clock time from their loading to the restart, then
    /// the session's clock; `nil` when the list is not ``isRestored`` (or its items were persisted without a
    /// time).
    public var restoredAge: Duration? {
        guard isRestored, let loadedAt = link?.restoredAt else { return nil }
        return max(.zero, session.now - loadedAt)
    }

    /// How many callers wait for operations in flight, a shared page counted once per caller.
    /// Observation tracks it, as it does the state: a test can wait for callers to join a shared page.
    public var waitingCallerCount: Int { machineWaitingCallerCount }

    /// The state machine's whole state, for the package's tests to say why a schedule is stuck.
    var machineDescription: String { describedMachine }
}

extension ListResource {
    /// News of items from another holder in the store, as `[ItemNews<Item, Item.ID>]`.
    ///
    /// `@inlinable`, and called through a closure the store's inlinable `list(_:request:)` makes in the client's
    /// module, so that one update reaching many lists runs specialized code for the client's item type.
    @inlinable func receive(storeNews news: any Sendable) {
        guard let news = news as? [ItemNews<Item, Item.ID>] else { return }
        let request = request
        run(transition { machine, _ in machine.receive(news) { Remote.placement(ofCreated: $0, in: request) } })
    }
}

extension ListResource: MachineHost {
    @usableFromInline func forward(_ news: [ItemNews<Item, Item.ID>]) {
        guard let heldLink else { return }
        heldLink.value.publish(self, news)
        afterNews?(self, false)
    }

    @inlinable var watcher: ObjectEvents<ListResource, ListMachine<Item, Remote.Pagination.PageKey>> {
        ObjectEvents(self)
    }

    /// When an answer came: a list keeps its first page's, for its age (and, when its items are whole values,
    /// for the resources made from them).
    @inlinable var answerTime: Duration? { session.now }
}

extension ListResource: EventSubject {
    @inlinable var diagnosticsFeed: DiagnosticsFeed { session.feed }

    @inlinable var diagnosticSubject: DiagnosticSubject {
        diagnosticSubjectSlot.subject { .object(diagnosticLabel) }
    }

    @usableFromInline var diagnosticLabel: String {
        let request = Remote.ListRequest.self == Void.self ? "" : " \(String(describing: request).prefix(80))"
        return TypeNames.name(of: Remote.self, as: .list) + request
    }

    @inlinable static func diagnosticState(_ state: ListState<Item>) -> DiagnosticState {
        var summary = DiagnosticState.of(state.content)
        summary.items = Int32(clamping: state.content.value?.count ?? 0)
        summary.isLoadingNextPage = state.pagination.isLoadingNextPage
        return summary
    }
}

extension ListResource where Remote.ListRequest == Void {
    /// Creates a list whose endpoint takes no request, as `ListResource<RemoteFeed>(session: api)`.
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - state: The initial state, for tests and previews; `.idle` by default.
    public convenience init(session: NetworkSession, state: ListState<Item> = ListState()) {
        self.init(session: session, request: (), state: state)
    }

    /// Creates a list whose endpoint takes no request in a fixed state with no network, for previews.
    /// - Parameter state: The state.
    public convenience init(state: ListState<Item>) {
        self.init(session: .offline, request: (), state: state)
    }
}
