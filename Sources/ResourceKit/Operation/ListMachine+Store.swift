/// What a store asks of a list's machine: news of items from other holders, and optimistic layers.
extension ListMachine {
    @usableFromInline typealias News = [ItemNews<Item, Item.ID>]

    @inlinable mutating func takeNews() -> News? {
        guard !news.isEmpty else { return nil }
        defer { news = [] }
        return news
    }

    /// A page brought `item`: the store hears of it at the page's rank.
    @inlinable mutating func tellPageItem(_ item: Item, sentAt: UInt64) {
        let newer = changes[item.id].map { max($0.rank, sentAt) } ?? sentAt
        itemRanks[item.id] = newer
        news.append(.fact(item.id, .value(item), rank: sentAt))
    }

    /// News from other holders in the store. A fact lands on an item the list shows when it is newer than
    /// what the list shows, and is kept for pages in flight sent before it; a created item is placed where
    /// `placement` says.
    @inlinable mutating func receive(_ incoming: News, placement: (Item) -> ListPlacement) -> Effects {
        // A created item that answers a placeholder this list shows (a kept create that landed) takes the
        // placeholder's place, wherever the list would place an item created elsewhere.
        var placeholders: [ObjectIdentifier: ListPlacement] = [:]
        if !layers.isEmpty {
            for item in incoming where item.kind == .fact && item.created {
                guard let token = item.token else { continue }
                for stack in layers.values {
                    if let layer = stack.last(where: { $0.token == token }), layer.place != .omitted {
                        placeholders[ObjectIdentifier(token)] = layer.place
                    }
                }
            }
        }
        // Changes that ended but whose end has not reached this list yet (a kept change that landed: its
        // answer comes first) go now, in the same transition as the answer.
        var changed = layers.isEmpty ? false : dropEndedLayers()
        let pagesInFlight =
            book.operationCount > 0 && book.operations.values.contains { !$0.isSerial && !$0.isAbandoned }
        for item in incoming {
            switch item.kind {
            case .fact:
                let placeholder = item.token.flatMap { placeholders[ObjectIdentifier($0)] }
                changed =
                    receive(
                        item.value, of: item.id, rank: item.rank, created: item.created, pagesInFlight: pagesInFlight,
                        placement: { item in placeholder ?? placement(item) }) || changed
            case .layer:
                // A change whose end reached us first, or will never reach us, is not shown.
                // (An outbox's change may reach a new holder twice: from the store's news, and as it is made.)
                guard let token = item.token, !token.hasEnded,
                    layers[item.id]?.contains(where: { $0.token == token }) != true
                else { continue }
                // A create's item shows where this list's own create shows it (a change the outbox kept, over the
                // create that made it: the placeholder never moves), or else where this list places created
                // items; a change's, only over an item the list holds.
                var place = ListPlacement.omitted
                if item.created {
                    if let own = layers[item.id]?.last(where: { $0.place != .omitted }) {
                        place = own.place
                    } else {
                        place = item.value.map(placement) ?? .omitted
                    }
                }
                changed = addLayer(ListLayer(token: token, fact: item.fact, place: place), of: item.id) || changed
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
            case let item? where created && position(of: id) == nil:
                // Kept where this list places items created elsewhere, and not at all where it places none
                // (a page that brings it still shows it, replaced by this newer copy).
                let place = placement(item)
                changes[id] = (rank, place == .omitted ? .replaced(item) : .inserted(item, atStart: place == .start))
            case let item?: changes[id] = (rank, .replaced(item))
            case nil: changes[id] = (rank, .removed)
            }
        }
        if let position = position(of: id) {
            // One lookup: the rank is compared and replaced in place.
            func takesNewer(_ shown: inout UInt64) -> Bool {
                guard rank > shown else { return false }
                shown = rank
                return true
            }
            guard takesNewer(&itemRanks[id, default: 0]) else { return false }
            guard let item = value else {
                // Under an optimistic change the item stays, the change over it, until the change ends.
                if !layers.isEmpty, layers[id] != nil {
                    removedUnderLayers.insert(id)
                    return false
                }
                changeSettledItems { $0.remove(at: position) }
                rebuildIndex()
                return true
            }
            if !removedUnderLayers.isEmpty { removedUnderLayers.remove(id) }
            changeSettledItems { $0[position] = item }
            // Under an optimistic change the new value does not show until the change ends: the state is
            // made again, but observers are not told of a change they cannot see.
            if !layers.isEmpty, layers[id] != nil {
                redisplay()
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
        let ended = stack.remove(at: position)
        let wasShown = position == stack.count
        layers[layer.id] = stack.isEmpty ? nil : stack
        if telling, isShared { news.append(.unlayer(layer.id, token: layer.token)) }
        return wasShown
            && (self.position(of: layer.id) != nil || shows(inserting: ended) || shows(inserting: stack.last))
    }

    /// Adds an optimistic change over item `id`; returns whether observers see a difference.
    @inlinable mutating func addLayer(_ layer: ListLayer<Item>, of id: Item.ID) -> Bool {
        var layer = layer
        layerCount += 1
        layer.order = layerCount
        let hidden = layers[id]?.last
        layers[id, default: []].append(layer)
        // A new top over a shown placeholder hides it, even when it shows nothing itself.
        return position(of: id) != nil || shows(inserting: layer) || shows(inserting: hidden)
    }

    /// Whether `layer`, on top of its item's changes, adds an item to what the list shows, where the list does
    /// not hold it.
    @inlinable func shows(inserting layer: ListLayer<Item>?) -> Bool {
        guard let layer else { return false }
        return layer.place != .omitted && layer.fact.value != nil && settled.content.value != nil
    }

    /// Removes the changes that ended (see ``LayerToken``); returns whether observers see a difference.
    @inlinable mutating func dropEndedLayers() -> Bool {
        var changed = false
        for (id, stack) in layers where stack.contains(where: { $0.token.hasEnded }) {
            let kept = stack.filter { !$0.token.hasEnded }
            if let top = stack.last, top.token.hasEnded {
                changed = changed || position(of: id) != nil || shows(inserting: top) || shows(inserting: kept.last)
            }
            layers[id] = kept.isEmpty ? nil : kept
        }
        return changed
    }

    /// The items with the newest optimistic change of each shown over it, and the items of optimistic creates
    /// where the list places them, in the order they were made.
    @inlinable func overlaid(_ items: [Item]) -> [Item] {
        var result = items
        var removed: Set<Item.ID> = []
        var inserted: [ListLayer<Item>] = []
        for (id, stack) in layers {
            guard let top = stack.last else { continue }
            guard let position = index.position(of: id, in: items) else {
                if top.place != .omitted, top.fact.value != nil { inserted.append(top) }
                continue
            }
            switch top.fact {
            case .value(let item): result[position] = item
            case .removed: removed.insert(id)
            }
        }
        if !removed.isEmpty { result.removeAll { removed.contains($0.id) } }
        for layer in inserted.sorted(by: { $0.order < $1.order }) {
            guard let item = layer.fact.value else { continue }
            if layer.place == .start { result.insert(item, at: 0) } else { result.append(item) }
        }
        return result
    }

    /// Removes the items held under changes that have all ended; returns whether any was removed.
    @inlinable mutating func settleRemovals() -> Bool {
        var removed = false
        for id in removedUnderLayers where layers[id] == nil {
            removedUnderLayers.remove(id)
            guard let position = position(of: id) else { continue }
            changeSettledItems { $0.remove(at: position) }
            rebuildIndex()
            removed = true
        }
        return removed
    }

    /// The item `id` as the list's settled items hold it, and its rank; `nil` for an item removed under a
    /// change (kept only to show the change where it was).
    func known(_ id: Item.ID) -> (item: Item, rank: UInt64, loadedAt: Duration?)? {
        if !removedUnderLayers.isEmpty, removedUnderLayers.contains(id) { return nil }
        guard let items = settled.content.value, let position = index.position(of: id, in: items) else { return nil }
        return (items[position], itemRanks[id] ?? 0, loadedAt)
    }

    /// Whether the list shows an item `matches` accepts.
    func holds(where matches: (Item) -> Bool) -> Bool {
        (settled.content.value ?? []).contains(where: matches)
    }
}

/// An optimistic change a list shows over an item.
@usableFromInline struct ListLayer<Item: Sendable>: Sendable {
    @usableFromInline var token: LayerToken
    @usableFromInline var fact: ItemFact<Item>
    /// Where the item shows when the list does not hold it: ``ListPlacement/omitted`` for a change of an item
    /// (shown only over one the list holds); for a create, where the list places created items.
    @usableFromInline var place: ListPlacement
    /// When it was added, among the list's layers: creates show in the order they were made.
    @usableFromInline var order: UInt64 = 0

    @inlinable init(token: LayerToken, fact: ItemFact<Item>, place: ListPlacement) {
        self.token = token
        self.fact = fact
        self.place = place
    }
}
