/// A map bounded by the total cost of its entries, which forgets its least recently used entry first.
/// Insert, lookup, update and removal are O(1): the entries form a doubly linked list threaded through an
/// array of slots.
struct LRUCache<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var cost: Int
        var newer: Int?
        var older: Int?
    }

    let capacity: Int
    /// The sum of the entries' costs; at most `capacity`.
    private(set) var totalCost = 0
    private var slots: [Slot?] = []
    private var free: [Int] = []
    private var positions: [Key: Int] = [:]
    private var newest: Int?
    private var oldest: Int?

    /// At most half of `Int.max` (whatever its width): each cost is at most the capacity, so the total never
    /// overflows on its way down.
    init(capacity: Int) { self.capacity = min(max(0, capacity), Int.max >> 1) }

    var count: Int { positions.count }

    /// The value for `key`, made the most recently used.
    mutating func take(_ key: Key) -> Value? {
        guard let position = positions[key], let slot = slots[position] else { return nil }
        unlink(position)
        link(position)
        return slot.value
    }

    /// Every entry, most recently used first, with its cost.
    var newestFirst: [(key: Key, value: Value, cost: Int)] {
        var result: [(key: Key, value: Value, cost: Int)] = []
        var position = newest
        while let current = position, let slot = slots[current] {
            result.append((slot.key, slot.value, slot.cost))
            position = slot.older
        }
        return result
    }

    /// Whether `key` has an entry.
    func contains(_ key: Key) -> Bool { positions[key] != nil }

    /// The value for `key`, without changing the order.
    func peek(_ key: Key) -> Value? {
        positions[key].flatMap { slots[$0]?.value }
    }

    /// Changes the value of an entry in place, without changing the order.
    mutating func update(_ key: Key, _ change: (inout Value) -> Void) {
        guard let position = positions[key], var slot = slots[position] else { return }
        change(&slot.value)
        slots[position] = slot
    }

    /// Changes every value in place, without changing the order.
    mutating func updateAll(_ change: (Key, inout Value) -> Void) {
        for position in slots.indices {
            guard var slot = slots[position] else { continue }
            change(slot.key, &slot.value)
            slots[position] = slot
        }
    }

    /// Inserts or replaces `key` as the most recently used entry; the oldest entries go until the total
    /// cost fits the capacity. An entry that costs more than the capacity is not kept; a cost below 1 counts
    /// as 1, so the number of entries stays bounded too.
    mutating func insert(_ value: Value, for key: Key, cost: Int = 1) {
        let cost = max(1, cost)
        removeValue(for: key)
        guard cost <= capacity, capacity > 0 else { return }
        let slot = Slot(key: key, value: value, cost: cost)
        let position: Int
        if let reused = free.popLast() {
            position = reused
            slots[position] = slot
        } else {
            position = slots.count
            slots.append(slot)
        }
        positions[key] = position
        totalCost += cost
        link(position)
        while totalCost > capacity, let oldest, oldest != position { remove(at: oldest) }
    }

    @discardableResult
    mutating func removeValue(for key: Key) -> Value? {
        guard let position = positions[key] else { return nil }
        return remove(at: position)
    }

    @discardableResult
    private mutating func remove(at position: Int) -> Value? {
        guard let slot = slots[position] else { return nil }
        unlink(position)
        slots[position] = nil
        free.append(position)
        positions[slot.key] = nil
        totalCost -= slot.cost
        return slot.value
    }

    private mutating func link(_ position: Int) {
        slots[position]?.older = newest
        slots[position]?.newer = nil
        if let newest { slots[newest]?.newer = position }
        newest = position
        if oldest == nil { oldest = position }
    }

    private mutating func unlink(_ position: Int) {
        guard let slot = slots[position] else { return }
        if let newer = slot.newer { slots[newer]?.older = slot.older } else { newest = slot.older }
        if let older = slot.older { slots[older]?.newer = slot.newer } else { oldest = slot.newer }
        slots[position]?.newer = nil
        slots[position]?.older = nil
    }
}
