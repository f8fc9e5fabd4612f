/// What a store asks of a list's machine: news of items from other holders, and optimistic layers.
extension ListMachine {
    typealias News = [ItemNews<Item, Item.ID>]

    mutating func takeNews() -> News? {
        guard !news.isEmpty else { return nil }
        defer { news = [] }
        return news
    }

    /// A page brought `item`: the store hears of it at the page's rank.
    mutating func tellPageItem(_ item: Item, sentAt: UInt64) {
        let newer = changes[item.id].map { max($0.rank, sentAt) } ?? sentAt
        itemRanks[item.id] = newer
        news.append(ItemNews(id: item.id, kind: .fact(.value(item), rank: sentAt, created: false)))
    }

    /// News from other holders in the store. A fact lands on an item the list shows when it is newer than
    /// what the list shows, and is kept for pages in flight sent before it; a created item is placed where
    /// `placement` says.
    mutating func receive(_ incoming: News, placement: (Item) -> ListPlacement) -> Effects {
        var changed = false
        for item in incoming {
            switch item.kind {
            case .fact(let fact, let rank, let created):
                changed = receive(fact, of: item.id, rank: rank, created: created, placement: placement) || changed
            case .layer(let token, let fact):
                layers[item.id, default: []].append((token, fact))
                changed = changed || index[item.id] != nil
            case .unlayer(let token):
                changed = endLayer((token, item.id), telling: false) || changed
            }
        }
        forgetSettledChanges()
        publish(settledChanged: changed)
        return .none
    }

    private mutating func receive(
        _ fact: ItemFact<Item>, of id: Item.ID, rank: UInt64, created: Bool, placement: (Item) -> ListPlacement
    ) -> Bool {
        // A page in flight that was sent before this change must not undo it.
        if (changes[id]?.rank ?? 0) < rank {
            switch fact {
            case .value(let item): changes[id] = (rank, created && index[id] == nil ? .inserted(item) : .replaced(item))
            case .removed: changes[id] = (rank, .removed)
            }
        }
        var items: [Item]
        if let position = index[id] {
            guard rank > itemRanks[id] ?? 0 else { return false }
            itemRanks[id] = rank
            // Take the items out so the array is uniquely held and changes in place.
            state = ListState()
            items = settled.content.value ?? []
            switch fact {
            case .value(let item): items[position] = item
            case .removed: items.remove(at: position)
            }
            settled.content = .available(items)
            if case .removed = fact { rebuildIndex() }
            // Under an optimistic change the new value does not show until the change ends: the state is
            // made again, but observers are not told of a change they cannot see.
            if case .value = fact, layers[id] != nil {
                state = display()
                return false
            }
            return true
        }
        guard created, case .value(let item) = fact, settled.pagination.pagesLoaded > 0 else { return false }
        let place = placement(item)
        guard place != .none else { return false }
        itemRanks[id] = rank
        state = ListState()
        items = settled.content.value ?? []
        if place == .start { items.insert(item, at: 0) } else { items.append(item) }
        settled.content = .available(items)
        rebuildIndex()
        return true
    }

    /// Ends an optimistic change; returns whether observers see a difference. A change under a newer one
    /// was never shown: removing it shows nothing new.
    mutating func endLayer(_ layer: (token: UInt64, id: Item.ID)?, telling: Bool) -> Bool {
        guard let layer, var stack = layers[layer.id],
            let position = stack.firstIndex(where: { $0.token == layer.token })
        else { return false }
        stack.remove(at: position)
        let wasShown = position == stack.count
        layers[layer.id] = stack.isEmpty ? nil : stack
        if telling, isShared { news.append(ItemNews(id: layer.id, kind: .unlayer(token: layer.token))) }
        return wasShown && index[layer.id] != nil
    }

    /// The items with the newest optimistic change of each shown over it.
    func overlaid(_ items: [Item]) -> [Item] {
        var result = items
        var removed: Set<Item.ID> = []
        for (id, stack) in layers {
            guard let top = stack.last, let position = index[id], position < result.count else { continue }
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
        guard let position = index[id], let items = settled.content.value, position < items.count else { return nil }
        return (items[position], itemRanks[id] ?? 0)
    }

    /// Whether the list shows an item `matches` accepts.
    func holds(where matches: (Item) -> Bool) -> Bool {
        (settled.content.value ?? []).contains(where: matches)
    }
}
