/// What a store asks of a list's machine: news of items from other holders, and optimistic layers.
extension ListMachine {
    @usableFromInline typealias News = [ItemNews<Item, Item.ID>]

    @usableFromInline mutating func takeNews() -> News? {
        guard !news.isEmpty else { return nil }
        defer { news = [] }
        return news
    }

    /// A page brought `item`: the store hears of it at the page's rank.
    mutating func tellPageItem(_ item: Item, sentAt: UInt64) {
        let newer = changes[item.id].map { max($0.rank, sentAt) } ?? sentAt
        itemRanks[item.id] = newer
        news.append(.fact(item.id, .value(item), rank: sentAt))
    }

    /// News from other holders in the store. A fact lands on an item the list shows when it is newer than
    /// what the list shows, and is kept for pages in flight sent before it; a created item is placed where
    /// `placement` says.
    @inlinable mutating func receive(_ incoming: News, placement: (Item) -> ListPlacement) -> Effects {
        var changed = false
        let pagesInFlight = book.operations.values.contains { !$0.isSerial && !$0.isAbandoned }
        for item in incoming {
            switch item.kind {
            case .fact:
                changed =
                    receive(
                        item.value, of: item.id, rank: item.rank, created: item.created, pagesInFlight: pagesInFlight,
                        placement: placement) || changed
            case .layer:
                // A change whose end reached us first, or will never reach us, is not shown.
                // (An outbox's change may reach a new holder twice: from the store's news, and as it is made.)
                guard let token = item.token, !token.hasEnded,
                    layers[item.id]?.contains(where: { $0.token == token }) != true
                else { continue }
                layers[item.id, default: []].append((token, item.fact))
                changed = changed || position(of: item.id) != nil
            case .unlayer:
                guard let token = item.token else { continue }
                changed = endLayer((token, item.id), telling: false) || changed
            }
        }
        if pagesInFlight { forgetSettledChanges() }
        publish(settledChanged: changed)
        return .none
    }

    @inlinable mutating func receive(
        _ value: Item?, of id: Item.ID, rank: UInt64, created: Bool, pagesInFlight: Bool,
        placement: (Item) -> ListPlacement
    ) -> Bool {
        // A page in flight that was sent before this change must not undo it.
        if pagesInFlight, (changes[id]?.rank ?? 0) < rank {
            switch value {
            case let item?: changes[id] = (rank, created && position(of: id) == nil ? .inserted(item) : .replaced(item))
            case nil: changes[id] = (rank, .removed)
            }
        }
        if let position = position(of: id) {
            guard rank > itemRanks[id] ?? 0 else { return false }
            itemRanks[id] = rank
            guard let item = value else {
                changeSettledItems { $0.remove(at: position) }
                rebuildIndex()
                return true
            }
            changeSettledItems { $0[position] = item }
            // Under an optimistic change the new value does not show until the change ends: the state is
            // made again, but observers are not told of a change they cannot see.
            if !layers.isEmpty, layers[id] != nil {
                state = display()
                return false
            }
            return true
        }
        guard created, let item = value, settled.pagination.pagesLoaded > 0 else { return false }
        let place = placement(item)
        guard place != .omitted else { return false }
        itemRanks[id] = rank
        changeSettledItems { items in
            if place == .start { items.insert(item, at: 0) } else { items.append(item) }
        }
        rebuildIndex()
        return true
    }

    /// Changes the settled items in place, keeping the content's case (a failed page keeps its error).
    @inlinable mutating func changeSettledItems(_ change: (inout [Item]) -> Void) {
        // Drop the other references first, so the array is uniquely held and changes without a copy.
        state = ListState()
        switch settled.content {
        case .available(var items):
            settled.content = .idle
            change(&items)
            settled.content = .available(items)
        case .failure(let error, var items?):
            settled.content = .idle
            change(&items)
            settled.content = .failure(error, previous: items)
        case .idle, .loading, .failure(_, nil):
            break
        }
    }

    /// Ends an optimistic change; returns whether observers see a difference. A change under a newer one
    /// was never shown: removing it shows nothing new.
    @inlinable mutating func endLayer(_ layer: (token: LayerToken, id: Item.ID)?, telling: Bool) -> Bool {
        // The change's own machine marks it ended in the transition that ends it (see ``LayerToken``).
        if telling { layer?.token.end() }
        guard let layer, var stack = layers[layer.id],
            let position = stack.firstIndex(where: { $0.token == layer.token })
        else { return false }
        stack.remove(at: position)
        let wasShown = position == stack.count
        layers[layer.id] = stack.isEmpty ? nil : stack
        if telling, isShared { news.append(.unlayer(layer.id, token: layer.token)) }
        return wasShown && self.position(of: layer.id) != nil
    }

    /// The items with the newest optimistic change of each shown over it.
    @inlinable func overlaid(_ items: [Item]) -> [Item] {
        var result = items
        var removed: Set<Item.ID> = []
        for (id, stack) in layers {
            guard let top = stack.last, let position = index.position(of: id, in: items) else { continue }
            switch top.fact {
            case .value(let item): result[position] = item
            case .removed: removed.insert(id)
            }
        }
        if !removed.isEmpty { result.removeAll { removed.contains($0.id) } }
        return result
    }

    /// The item `id` as the list's settled items hold it, and its rank.
    func known(_ id: Item.ID) -> (item: Item, rank: UInt64)? {
        guard let items = settled.content.value, let position = index.position(of: id, in: items) else { return nil }
        return (items[position], itemRanks[id] ?? 0)
    }

    /// Whether the list shows an item `matches` accepts.
    func holds(where matches: (Item) -> Bool) -> Bool {
        (settled.content.value ?? []).contains(where: matches)
    }
}
