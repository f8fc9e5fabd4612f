extension ListResource {
    // `@usableFromInline`: it meets `MachineHost`'s requirement (see ListResource.swift).
    @usableFromInline typealias Machine = ListMachine<Item, Remote.Pagination.PageKey>
    @usableFromInline typealias Outcome = Machine.Outcome

    /// Loads the first page and replaces the list with it when it arrives.
    ///
    /// A call joins a first-page load already in flight, unless a create, update or delete completed since that
    /// load was sent: then it sends its own, so the answer includes the change.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``; the list keeps its items and shows the failure.
    @inlinable
    @discardableResult
    public func loadFirstPage() async throws(NetworkError) -> [Item] {
        let work = try pageWork()
        let key = Remote.pagination.firstPageKey
        _ = try await perform { machine, call, waiter, ranks in
            machine.askFirstPage(call, waiter, key: key, ranks: &ranks, work: work)
        }
        .get()
        return items
    }

    /// Reloads the first page; the same as ``loadFirstPage()``.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func refresh() async throws(NetworkError) -> [Item] {
        try await loadFirstPage()
    }

    /// Loads the next page and appends it; loads the first page if none is loaded, or joins the first-page
    /// load in flight that is about to replace the list.
    ///
    /// A list made with pages already loaded (``init(session:request:state:)`` with `pagesLoaded` above 0, or a
    /// store's list restored from persistence) does not know its next page's key: while it says it has more,
    /// its next page is its first page again, which replaces it.
    ///
    /// At the end of the list this returns the items without a request.
    /// - Returns: The items.
    /// - Throws: ``NetworkError``; the loaded items stay and a later call retries the same page.
    ///   ``NetworkError/superseded`` when a refresh replaced the list before this page arrived.
    ///   ``NetworkError/invalidResponse(_:)`` when the server's next page is one already loaded (a cycle);
    ///   the list then ends.
    @inlinable
    @discardableResult
    public func loadNextPage() async throws(NetworkError) -> [Item] {
        let work = try pageWork()
        let key = Remote.pagination.firstPageKey
        _ = try await perform { machine, call, waiter, ranks in
            machine.askNextPage(call, waiter, firstPageKey: key, ranks: &ranks, work: work)
        }.get()
        return items
    }

    /// Loads pages while the list has more and fewer than `maxPages` are loaded.
    ///
    /// It loads no page once the list holds `maxPages` pages: a list that holds more already keeps them, and
    /// pages that other callers load meanwhile count as well. With no limit (the default), a server whose list
    /// never ends (every page full, every next key new) keeps it loading: pass a limit for a server you do not
    /// control.
    /// - Parameter maxPages: The most pages it loads the list up to; at least 1.
    /// - Returns: The items.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when `maxPages` is below 1, or a page's error.
    @inlinable
    @discardableResult
    public func loadAll(maxPages: Int = .max) async throws(NetworkError) -> [Item] {
        guard maxPages >= 1 else { throw .invalidRequest("loadAll(maxPages:) needs at least 1 page, not \(maxPages)") }
        var status = pagination
        while status.pagesLoaded == 0 || (status.hasMore && status.pagesLoaded < maxPages) {
            try await loadNextPage()
            status = pagination
        }
        return items
    }

    @usableFromInline func pageWork() throws(NetworkError) -> OperationWork<Outcome, Machine.Context> {
        let endpoint = try Remote.listEndpoint(for: request)
        let session = session
        let pagination = Remote.pagination
        let memo = pageMemo
        return { context in
            guard case .page(let key) = context else { return .success(.unchanged) }
            do throws(NetworkError) {
                return .success(
                    .page(
                        try await session.fetchPage(
                            endpoint, key: key, pagination: pagination, as: Remote.ListResponse.self, memo: memo)))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Runs a create, update or delete after every mutation asked before it.
    fileprivate func mutate(
        optimistic: (id: Item.ID, fact: ItemFact<Item>)? = nil, creating: Bool = false,
        _ send: @escaping @Sendable () async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> Outcome {
        let work: OperationWork<Outcome, Machine.Context> = { _ in
            do throws(NetworkError) {
                return .success(try await send())
            } catch {
                return .failure(error)
            }
        }
        return try await perform { machine, call, waiter, ranks in
            machine.askMutation(call, waiter, optimistic: optimistic, creating: creating, ranks: &ranks, work: work)
        }.get()
    }
}

extension ListResource where Remote.Value == Remote.Item {
    /// What the server had of item `id` when a change of it starts: the settled item (never an optimistic one)
    /// and its version, with what the store knows of the item's validators (``KnownVersions``: a list keeps
    /// none of its own).
    func mutationBase(of id: Item.ID) -> MutationBase? {
        guard let item = storage.withLock({ $0.machine.known(id) })?.item else { return nil }
        let validators = link?.knownValidators(AnyHashable(id))
        return MutationBase(validators: validators, version: Remote.version(of: item), value: item)
    }
}

extension ListResource where Remote: Creatable, Remote.Value == Remote.Item {
    /// Creates an item on the server and appends it to the list (or replaces the item with its id).
    ///
    /// A create the store's outbox keeps (ResourceKitPersistence's `OfflineQueueing.list(_:)`, the server
    /// unreachable) shows nothing until it lands, so there is no item to return: it throws
    /// `NetworkError.queued(_:)`, with the kept change's id (see ``create(_:optimistic:)`` to show it
    /// meanwhile, and have the call return it).
    /// - Parameter request: What to create.
    /// - Returns: The created item.
    /// - Throws: ``NetworkError``; the list is unchanged.
    @discardableResult
    public func create(_ request: Remote.CreateRequest) async throws(NetworkError) -> Item {
        try await create(request, showing: nil)
    }

    /// Creates an item on the server, showing `optimistic` at once until it answers.
    ///
    /// The list shows `optimistic` at its end, where the answer will go, when it has loaded a page (one that has
    /// not shows nothing until the answer lands, then the answer); in a ``ResourceStore``, every other live
    /// list of the item type shows it where its ``Listable/placement(ofCreated:in:)`` places created items
    /// (nowhere by default). Give it an id no real item has (a temporary one, different for each create): the
    /// server's answer, with the id it made, takes its place in the same change of state. A failed or
    /// cancelled create removes it. A create the store's outbox keeps (the server unreachable) returns
    /// `optimistic`, which stays shown, in lists made later too, until it lands or is refused; after a restart
    /// it shows only where lists place created items (which list made it is not kept).
    /// - Parameters:
    ///   - request: What to create.
    ///   - optimistic: The item to show until the server answers.
    /// - Returns: The created item.
    /// - Throws: ``NetworkError``; the list is then as it was.
    @discardableResult
    public func create(_ request: Remote.CreateRequest, optimistic: Item) async throws(NetworkError) -> Item {
        try await create(request, showing: optimistic)
    }

    private func create(_ request: Remote.CreateRequest, showing: Item?) async throws(NetworkError) -> Item {
        let endpoint = try Remote.createEndpoint(for: request)
        let session = session
        let mutations = link?.mutations?.creating
        let outcome = try await mutate(optimistic: showing.map { ($0.id, .value($0)) }, creating: true) {
            () async throws(NetworkError) -> Outcome in
            func send(_ endpoint: Endpoint) async throws(NetworkError) -> Outcome {
                // The response first, in a statement of its own: under -O, Swift 6.3.1 can lose a value
                // evaluated before a `try await` in the same expression.
                let response = try await session.response(for: endpoint)
                let item = try Remote.value(fromCreate: session.decode(Remote.CreateResponse.self, from: response))
                // The answer's validators are the new item's (RFC 9110 §9.3.3): the store keeps them as its version.
                return .inserted(item, Validators(response.headers))
            }
            return try await mutations.send(
                .create, showing: showing, shownID: showing.map { AnyHashable($0.id) }, base: { nil }, endpoint,
                session, send)
        }
        // Kept for later (the outbox): its placeholder shows where lists place created items, and is the answer
        // for now. Kept with nothing to show, the caller hears that it was kept.
        if case .handedOff(let error) = outcome {
            guard let showing else { throw error }
            return showing
        }
        guard case .inserted(let item, _) = outcome else { throw .invalidRequest("create returned no item") }
        return item
    }
}

extension ListResource where Remote: Updatable, Remote.Value == Remote.Item {
    /// Updates an item on the server and replaces it in the list by id.
    /// - Parameter request: The update.
    /// - Returns: The updated item.
    /// - Throws: ``NetworkError``; the list is unchanged.
    @discardableResult
    public func update(_ request: Remote.UpdateRequest) async throws(NetworkError) -> Item {
        try await update(request, showing: nil)
    }

    /// Updates an item on the server, showing `optimistic` in its place at once.
    ///
    /// The list, and in a ``ResourceStore`` every live resource and list holding the item, show `optimistic`
    /// until the server answers; then its answer. A failed or cancelled update removes the optimistic value
    /// (and only it: a later optimistic change of the same item still shows), leaving every holder as it
    /// would be without it. An update the store's outbox keeps (ResourceKitPersistence's
    /// `OfflineQueueing.list(_:)`, the server unreachable) returns `optimistic`, which stays shown until it is
    /// sent. (The outbox keeps a list's update only with an optimistic item: it names the item.)
    /// - Parameters:
    ///   - request: The update.
    ///   - optimistic: The item to show until the server answers.
    /// - Returns: The updated item.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func update(_ request: Remote.UpdateRequest, optimistic: Item) async throws(NetworkError) -> Item {
        try await update(request, showing: (optimistic.id, .value(optimistic)))
    }

    private func update(
        _ request: Remote.UpdateRequest, showing: (id: Item.ID, fact: ItemFact<Item>)?
    ) async throws(NetworkError) -> Item {
        let endpoint = try Remote.updateEndpoint(for: request)
        let session = session
        // Kept offline only with an optimistic item: it names the item the update changes.
        let mutations = showing.flatMap { showing in link?.mutations?.item(AnyHashable(showing.id)) }
        let outcome = try await mutate(optimistic: showing) { () async throws(NetworkError) -> Outcome in
            func send(_ endpoint: Endpoint) async throws(NetworkError) -> Outcome {
                let response = try await session.response(for: endpoint)
                let item = try Remote.value(fromUpdate: session.decode(Remote.UpdateResponse.self, from: response))
                // The answer's validators are the new value's (RFC 9110 §9.3.4), kept by the store for every holder.
                return .replaced(item, Validators(response.headers))
            }
            return try await mutations.send(
                .update, showing: showing?.fact.value, base: { showing.flatMap { self.mutationBase(of: $0.id) } },
                endpoint, session, send)
        }
        // Kept for later (the outbox, which keeps a list's update only with its optimistic item): every holder
        // shows the optimistic item, and it is the answer for now.
        if case .handedOff(let error) = outcome {
            guard let shown = showing?.fact.value else { throw error }
            return shown
        }
        guard case .replaced(let item, _) = outcome else { throw .invalidRequest("update returned no item") }
        return item
    }
}

extension ListResource where Remote: Deletable, Remote.Value == Remote.Item {
    /// Deletes an item on the server and removes it from the list (a soft delete replaces it instead).
    /// - Parameter item: The item to delete.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when no request can be derived from the item, or the
    ///   delete's error; the list is unchanged.
    public func delete(_ item: Item) async throws(NetworkError) {
        try await delete(item, optimistic: false)
    }

    /// Deletes an item on the server; with `optimistic`, leaves it out of the list (and, in a
    /// ``ResourceStore``, out of every list and resource holding it) at once. A failed or cancelled delete
    /// brings it back; one the store's outbox keeps (the server unreachable) returns, and the deletion stays
    /// shown until it is sent.
    /// - Parameters:
    ///   - item: The item to delete.
    ///   - optimistic: Whether to show the deletion before the server answers.
    /// - Throws: ``NetworkError``.
    public func delete(_ item: Item, optimistic: Bool) async throws(NetworkError) {
        guard let request = Remote.deleteRequest(from: item) else {
            throw .invalidRequest("\(Remote.self) cannot derive a delete request from the item")
        }
        let endpoint = try Remote.deleteEndpoint(for: request)
        let session = session
        let id = item.id
        let mutations = link?.mutations?.item(AnyHashable(id))
        _ = try await mutate(optimistic: optimistic ? (id, .removed) : nil) {
            () async throws(NetworkError) -> Outcome in
            func send(_ endpoint: Endpoint) async throws(NetworkError) -> Outcome {
                let response = try await session.send(endpoint, as: Remote.DeleteResponse.self)
                return try Remote.value(fromDelete: response).map { .replaced($0, nil) } ?? .removed(id)
            }
            // Kept for later (the outbox), the deletion shows everywhere: the call returns.
            return try await mutations.send(.delete, base: { self.mutationBase(of: id) }, endpoint, session, send)
        }
    }
}
