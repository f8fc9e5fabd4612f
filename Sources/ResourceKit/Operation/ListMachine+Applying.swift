/// How answers change a list: replacing it, appending a page, applying a mutation.
extension ListMachine {
    @inlinable mutating func replaceList(
        with page: FetchedPage<Item, PageKey>, key: PageKey, sentAt: UInt64, now: Duration?,
        into effects: inout Effects
    ) {
        state = ListState()
        settled.content = .idle
        index = ItemIndex()
        removedUnderLayers = []
        if isShared { itemRanks = [:] }
        var items: [Item] = []
        items.reserveCapacity(page.items.count)
        merge(page.items, into: &items, sentAt: sentAt)
        // Items created after this page was sent are kept, in the order they were created, where each was placed:
        // at the end, or at the start (the newest first): the page is older than they are.
        var startsWith: [Item] = []
        for (id, entry) in changes.sorted(by: { $0.value.rank < $1.value.rank }) where entry.rank > sentAt {
            if case .inserted(let item, let atStart) = entry.change, index.position(of: id, in: items) == nil {
                if atStart {
                    startsWith.insert(item, at: 0)
                } else {
                    items.append(item)
                    index.insert(id, at: items.count - 1, in: items)
                }
            }
        }
        if !startsWith.isEmpty {
            items.insert(contentsOf: startsWith, at: 0)
            index = ItemIndex()
            index.reserve(items.count, in: items)
            for (position, item) in items.enumerated() where index.position(of: item.id, in: items) == nil {
                index.insert(item.id, at: position, in: items)
            }
        }
        epoch &+= 1
        if let now { loadedAt = now }
        loadedKeys = [key]
        nextKey = page.nextKey
        settled.content = .available(items)
        settled.pagination = PaginationStatus(
            hasMore: page.nextKey != nil, pagesLoaded: 1, totalCount: page.context.totalItems)
        // The next page in flight belongs to the old list: its callers are told, its request is cancelled.
        if let id = nextPage {
            book.dismiss(id, with: .failure(.superseded), into: &effects)
            nextPage = nil
        }
    }

    /// Appends a page; returns the error that ends a pagination cycle.
    @inlinable mutating func appendPage(_ page: FetchedPage<Item, PageKey>, key: PageKey, sentAt: UInt64)
        -> NetworkError?
    {
        // Appending must not copy every loaded item: drop the other references first, so the array is
        // uniquely held and grows in place. Without this, N pages cost O(N²).
        state = ListState()
        var items = settled.content.value ?? []
        settled.content = .idle
        merge(page.items, into: &items, sentAt: sentAt)
        var pagination = settled.pagination
        pagination.pagesLoaded = pagination.pagesLoaded == .max ? .max : pagination.pagesLoaded + 1
        pagination.totalCount = page.context.totalItems ?? pagination.totalCount
        pagination.nextPageError = nil
        loadedKeys.append(key)
        nextKey = page.nextKey
        var cycle: NetworkError?
        if let next = nextKey, loadedKeys.contains(next) {
            nextKey = nil
            cycle = .invalidResponse(
                "the next page (\(next)) was loaded before: the server's pagination has a cycle, so the list ends")
        }
        pagination.hasMore = nextKey != nil
        pagination.nextPageError = cycle
        settled.pagination = pagination
        settled.content = cycle.map { .failure($0, previous: items) } ?? .available(items)
        return cycle
    }

    /// Applies a completed mutation; returns whether the list changed.
    @inlinable mutating func apply(_ outcome: Outcome, ranks: inout Ranks) -> Bool {
        let id: Item.ID
        let change: Change
        var validators: Validators?
        switch outcome {
        case .inserted(let item, let answered):
            (id, change, validators) = (item.id, .inserted(item, atStart: false), answered)
        case .replaced(let item, let answered): (id, change, validators) = (item.id, .replaced(item), answered)
        case .removed(let removed): (id, change) = (removed, .removed)
        case .page, .unchanged, .handedOff: return false
        }
        let rank = ranks.draw()
        changes[id] = (rank, change)
        // The server's answer is newer than a removal held under this list's change.
        if !removedUnderLayers.isEmpty { removedUnderLayers.remove(id) }
        if isShared {
            itemRanks[id] = rank
            switch change {
            case .inserted(let item, _):
                news.append(.fact(id, .value(item), rank: rank, created: true, validators: validators))
            case .replaced(let item):
                news.append(.fact(id, .value(item), rank: rank, validators: validators))
            case .removed: news.append(.fact(id, .removed, rank: rank))
            }
        }
        let position = self.position(of: id)
        if position == nil, case .inserted = change {} else if position == nil { return false }
        // Take the items out so the array is uniquely held and changes in place.
        state = ListState()
        var items = settled.content.value ?? []
        settled.content = .idle
        switch (change, position) {
        case (.inserted(let item, _), nil):
            items.append(item)
            index.insert(id, at: items.count - 1, in: items)
        case (.inserted(let item, _), let position?), (.replaced(let item), let position?):
            items[position] = item
        case (.removed, let position?):
            items.remove(at: position)
        default: break
        }
        settled.content = .available(items)
        if case .removed = change { rebuildIndex() }
        return true
    }

    /// Merges a page: an item already listed is replaced in place (it moved between pages); a completed
    /// mutation newer than the page wins over the page's copy.
    @inlinable mutating func merge(_ newItems: [Item], into items: inout [Item], sentAt: UInt64) {
        // Grown once per page instead of step by step as the page fills; by half, so a list of many pages still
        // grows geometrically, with a quarter of spare room on average instead of a half.
        let needed = items.count + newItems.count
        index.reserve(needed, in: items)
        if items.capacity < needed { items.reserveCapacity(max(needed, items.capacity + items.capacity / 2)) }
        // This runs for every item of every page, unspecialized: no lookup in an empty table of changes, and
        // one hash of the id for finding it and indexing it.
        let hasChanges = !changes.isEmpty
        let hasRemovals = !removedUnderLayers.isEmpty
        for var item in newItems {
            if isShared { tellPageItem(item, sentAt: sentAt) }
            if hasChanges, let entry = changes[item.id], entry.rank > sentAt {
                switch entry.change {
                case .removed: continue
                case .inserted(let newer, _), .replaced(let newer): item = newer
                }
            }
            let id = item.id
            let hash = id.hashValue
            if hasRemovals { removedUnderLayers.remove(id) }
            if let position = index.position(of: id, hash: hash, in: items) {
                items[position] = item
            } else {
                items.append(item)
                index.insert(hash: hash, at: items.count - 1, in: items)
            }
        }
    }

    /// Changes matter only to pages sent before them; with no such page in flight they are forgotten.
    @inlinable mutating func forgetSettledChanges() {
        guard !changes.isEmpty else { return }
        let oldest = book.operations.values.lazy.filter { !$0.isSerial && !$0.isAbandoned }.map { $0.sentAt }.min()
        guard let oldest else {
            changes.removeAll()
            return
        }
        changes = changes.filter { $0.value.rank > oldest }
    }
}
