public import Observation

/// A paginated remote list: its items, its pagination, and the operations that change them.
///
/// Like ``Resource`` it is `Sendable`, readable synchronously (``state``, ``listState``), observable with
/// ``states`` and with Observation. It never shares state with a single-item resource.
///
/// - ``loadFirstPage()`` and ``refresh()`` replace the list when the new first page arrives; the old items
///   stay visible meanwhile.
/// - ``loadNextPage()`` appends the next page. Concurrent calls share one request, so no page is fetched
///   twice; at the end of the list it does nothing. A failed page keeps every loaded item, and the next call
///   retries it. A refresh that starts while a page loads wins: that page is dropped.
/// - Items are de-duplicated by `id` across pages.
public final class ListResource<Remote: Listable>: Sendable, Observable {
    /// The item type.
    public typealias Item = Remote.Item

    /// The session that sends the requests.
    public let session: NetworkSession
    /// What selects the list.
    public let request: Remote.ListRequest

    let storage: Locked<Storage>
    let registrar = ObservationRegistrar()
    let stateKeyPath: any KeyPath<ListResource, ListState<Item>> & Sendable = \.listState

    /// Creates a list.
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - request: What selects the list.
    ///   - state: The initial state, for tests and previews; `.idle` by default.
    public init(session: NetworkSession, request: Remote.ListRequest, state: ListState<Item> = ListState()) {
        self.session = session
        self.request = request
        self.storage = Locked(Storage(state: state))
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

    /// A new stream of list states: first the current one, then every change in order.
    public var states: AsyncStream<ListState<Item>> { makeStateStream() }

    /// How many `states` streams are registered.
    public var observerCount: Int { registeredObserverCount }

    /// Loads the first page and replaces the list with it when it arrives.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func loadFirstPage() async throws(NetworkError) -> [Item] {
        let endpoint = try Remote.listEndpoint(for: request)
        let session = session
        let pagination = Remote.pagination
        _ = try await perform(sharingKey: "first", context: .first) {
            _ async throws(NetworkError) -> Outcome in
            let fetched = try await session.fetchPage(
                endpoint, key: pagination.firstPageKey, pagination: pagination, as: Remote.ListResponse.self)
            return .page(fetched)
        }
        return items
    }

    /// Reloads the first page; the same as ``loadFirstPage()``.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func refresh() async throws(NetworkError) -> [Item] {
        try await loadFirstPage()
    }

    /// Loads the next page and appends it; loads the first page if none is loaded.
    ///
    /// At the end of the list this returns the items without a request.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``; the loaded items stay and a later call retries the same page.
    @discardableResult
    public func loadNextPage() async throws(NetworkError) -> [Item] {
        let step: NextPageStep = storage.withLock { storage in
            let status = storage.observed.value.pagination
            if status.pagesLoaded == 0 || storage.operations.shared["first"] != nil { return .first }
            return status.hasMore ? .next : .end
        }
        switch step {
        case .first: return try await loadFirstPage()
        case .end: return items
        case .next: break
        }
        let endpoint = try Remote.listEndpoint(for: request)
        let session = session
        let pagination = Remote.pagination
        _ = try await perform(sharingKey: "next", context: .next(key: nil, generation: 0)) {
            context async throws(NetworkError) -> Outcome in
            guard case .next(let key?, _) = context else { return .skipped }
            let fetched = try await session.fetchPage(
                endpoint, key: key, pagination: pagination, as: Remote.ListResponse.self)
            return .page(fetched)
        }
        return items
    }

    /// Loads pages until the end of the list or `maxPages` pages in all.
    /// - Parameter maxPages: The most pages the list may hold afterwards.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func loadAll(maxPages: Int = .max) async throws(NetworkError) -> [Item] {
        var items = try await loadNextPage()
        while pagination.hasMore, pagination.pagesLoaded < maxPages {
            items = try await loadNextPage()
        }
        return items
    }

    typealias Fetched = FetchedPage<Item, Remote.Pagination.PageKey>

    enum Outcome: Sendable {
        case page(Fetched)
        case inserted(Item)
        case replaced(Item)
        case removed(Item.ID)
        case skipped
    }

    enum Context: Sendable {
        case first
        case next(key: Remote.Pagination.PageKey?, generation: UInt64)
        case mutation
    }

    struct Storage: OperationStorage, ObservedStorage {
        var observed: ObservedValue<ListState<Item>>
        /// The last content that is not `.loading`: restored when a first-page load is cancelled.
        var settled: ResourceState<[Item]>
        var index: [Item.ID: Int] = [:]
        var nextKey: Remote.Pagination.PageKey?
        /// Restored when a next-page load is cancelled.
        var nextPageErrorBeforeLoad: NetworkError?
        /// Changes whenever the list is replaced; a next page from an older list is dropped.
        var listGeneration: UInt64 = 0
        var operations = OperationTable<Outcome, Context>()

        init(state: ListState<Item>) {
            observed = ObservedValue(state)
            settled =
                if case .loading(let previous) = state.content { previous.map { .available($0) } ?? .idle } else {
                    state.content
                }
            nextKey = Remote.pagination.firstPageKey
            rebuildIndex()
        }

        var currentItems: [Item] { observed.value.content.value ?? [] }

        mutating func rebuildIndex() {
            index = [:]
            for (position, item) in currentItems.enumerated() where index[item.id] == nil {
                index[item.id] = position
            }
        }
    }
}

private enum NextPageStep { case first, end, next }
