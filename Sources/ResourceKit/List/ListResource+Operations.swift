extension ListResource: ObservableHost, OperationHost {
    static func begin(_ entry: inout Entry, in storage: inout Storage) -> Bool {
        var state = storage.observed.value
        switch entry.context {
        case .first:
            entry.generation = storage.operations.nextGeneration()
            // The list is about to be replaced: a next page in flight now belongs to the old list.
            storage.listGeneration &+= 1
            storage.operations.shared.removeValue(forKey: "next")
            state.pagination.isLoadingNextPage = false
            if !state.content.isLoading { state.content = .loading(previous: storage.settled.value) }
        case .next:
            guard state.pagination.hasMore, let key = storage.nextKey else {
                entry.context = .next(key: nil, generation: storage.listGeneration)
                return true
            }
            entry.context = .next(key: key, generation: storage.listGeneration)
            storage.nextPageErrorBeforeLoad = state.pagination.nextPageError
            state.pagination.isLoadingNextPage = true
            state.pagination.nextPageError = nil
            if case .failure(_, let previous) = state.content { state.content = .available(previous ?? []) }
        case .mutation:
            return true
        }
        storage.observed.set(state)
        return true
    }

    static func join(_ entry: inout Entry, in storage: inout Storage) {}

    static func finish(_ entry: Entry, with result: Result<Outcome, NetworkError>, in storage: inout Storage) {
        switch entry.context {
        case .first:
            guard entry.generation == storage.operations.generation else { return }
            finishFirstPage(result, in: &storage)
        case .next(_, let generation):
            guard generation == storage.listGeneration else { return }
            finishNextPage(result, in: &storage)
        case .mutation:
            guard case .success(let outcome) = result else { return }
            applyMutation(outcome, in: &storage)
        }
    }

    private static func finishFirstPage(_ result: Result<Outcome, NetworkError>, in storage: inout Storage) {
        var state = storage.observed.value
        switch result {
        case .success(.page(let page)):
            storage.listGeneration &+= 1
            storage.index = [:]
            var items: [Item] = []
            items.reserveCapacity(page.items.count)
            merge(page.items, into: &items, index: &storage.index)
            storage.nextKey = page.nextKey
            state.pagination = PaginationStatus(
                hasMore: page.nextKey != nil, pagesLoaded: 1, totalCount: page.context.totalItems)
            state.content = .available(items)
        case .success:
            return
        case .failure(.cancelled):
            state.content = storage.settled
        case .failure(let error):
            state.content = .failure(error, previous: storage.settled.value)
        }
        storage.settled = state.content
        storage.observed.set(state)
    }

    private static func finishNextPage(_ result: Result<Outcome, NetworkError>, in storage: inout Storage) {
        // Appending must not copy every loaded item: drop the other references to the items first, so the
        // array is uniquely held and grows in place. Without this, N pages cost O(N²).
        let cancelled: ResourceState<[Item]>?
        if case .failure(.cancelled) = result { cancelled = storage.settled } else { cancelled = nil }
        storage.settled = .idle
        let errorBeforeLoad = storage.nextPageErrorBeforeLoad
        var index = storage.index
        storage.index = [:]
        storage.observed.modify { state in
            state.pagination.isLoadingNextPage = false
            switch result {
            case .success(.page(let page)):
                var items = state.content.value ?? []
                state.content = .idle
                merge(page.items, into: &items, index: &index)
                state.pagination.pagesLoaded += 1
                state.pagination.hasMore = page.nextKey != nil
                state.pagination.totalCount = page.context.totalItems ?? state.pagination.totalCount
                state.content = .available(items)
            case .success:
                break
            case .failure(.cancelled):
                if let cancelled { state.content = cancelled }
                state.pagination.nextPageError = errorBeforeLoad
            case .failure(let error):
                state.pagination.nextPageError = error
                state.content = .failure(error, previous: state.content.value ?? [])
            }
        }
        if case .success(.page(let page)) = result { storage.nextKey = page.nextKey }
        storage.index = index
        storage.settled = storage.observed.value.content
    }

    private static func applyMutation(_ outcome: Outcome, in storage: inout Storage) {
        var state = storage.observed.value
        var items = storage.currentItems
        switch outcome {
        case .inserted(let item):
            merge([item], into: &items, index: &storage.index)
        case .replaced(let item):
            guard let position = storage.index[item.id] else { return }
            items[position] = item
        case .removed(let id):
            guard let position = storage.index[id] else { return }
            items.remove(at: position)
            state.content = .available(items)
            storage.settled = state.content
            storage.observed.set(state)
            storage.rebuildIndex()
            return
        case .page, .skipped:
            return
        }
        state.content = .available(items)
        storage.settled = state.content
        storage.observed.set(state)
    }

    /// Appends items not yet in the list; an item already there is replaced in place, so an item that moved
    /// between pages appears once.
    private static func merge(_ newItems: [Item], into items: inout [Item], index: inout [Item.ID: Int]) {
        for item in newItems {
            if let position = index[item.id] {
                items[position] = item
            } else {
                index[item.id] = items.count
                items.append(item)
            }
        }
    }
}

extension ListResource where Remote: Creatable, Remote.Value == Remote.Item {
    /// Creates an item on the server and appends it to the list (or replaces the item with its id).
    /// - Parameter request: What to create.
    /// - Returns: The created item.
    /// - Throws: ``NetworkError``; the list is unchanged.
    @discardableResult
    public func create(_ request: Remote.CreateRequest) async throws(NetworkError) -> Item {
        let endpoint = try Remote.createEndpoint(for: request)
        let session = session
        let outcome = try await perform(serial: true, context: .mutation) { _ async throws(NetworkError) -> Outcome in
            .inserted(try Remote.value(fromCreate: try await session.send(endpoint, as: Remote.CreateResponse.self)))
        }
        guard case .inserted(let item) = outcome else { throw .invalidRequest("create returned no item") }
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
        let endpoint = try Remote.updateEndpoint(for: request)
        let session = session
        let outcome = try await perform(serial: true, context: .mutation) { _ async throws(NetworkError) -> Outcome in
            .replaced(try Remote.value(fromUpdate: try await session.send(endpoint, as: Remote.UpdateResponse.self)))
        }
        guard case .replaced(let item) = outcome else { throw .invalidRequest("update returned no item") }
        return item
    }
}

extension ListResource where Remote: Deletable, Remote.Value == Remote.Item {
    /// Deletes an item on the server and removes it from the list (a soft delete replaces it instead).
    /// - Parameter item: The item to delete.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when no request can be derived from the item, or the
    ///   delete's error; the list is unchanged.
    public func delete(_ item: Item) async throws(NetworkError) {
        guard let request = Remote.deleteRequest(from: item) else {
            throw .invalidRequest("\(Remote.self) cannot derive a delete request from the item")
        }
        let endpoint = try Remote.deleteEndpoint(for: request)
        let session = session
        let id = item.id
        _ = try await perform(serial: true, context: .mutation) { _ async throws(NetworkError) -> Outcome in
            let response = try await session.send(endpoint, as: Remote.DeleteResponse.self)
            return try Remote.value(fromDelete: response).map { .replaced($0) } ?? .removed(id)
        }
    }
}
