// `@inlinable` over `@usableFromInline` members: the store's news path, which clients specialize (see
// ListMachine.swift), looks items up here. That makes them part of the module's API surface.

/// Where each item of a list is, by id: an open-addressing table of positions into the list's items, 5 bytes a
/// slot.
///
/// A `[ID: Int]` held each id and position again, at a load of at most 3/4 in a power-of-two table: 2.6 times
/// the 16-byte items of a 100,000-item list. This one keeps no ids (a slot's candidate is checked against the
/// item at its position), grows by half (its load stays between 1/2 and 3/4), and checks a 7-bit tag of the
/// hash before it reads an item, so a miss rarely touches the items.
@usableFromInline struct ItemIndex<ID: Hashable> {
    /// One allocation: a position per slot, then the slots' tags, four to a word. A tag is 0 for an empty slot,
    /// else `0x80` and 7 bits of the hash.
    @usableFromInline var storage: [UInt32] = []
    /// The number of slots.
    @usableFromInline var size = 0
    @usableFromInline var count = 0

    @inlinable init() {}

    /// The position of `id` in `items`, the array the index was built for.
    @inlinable func position<Item: Identifiable>(of id: ID, in items: [Item]) -> Int? where Item.ID == ID {
        position(of: id, hash: id.hashValue, in: items)
    }

    /// The position of `id`, whose `hashValue` is `hash`, in `items`: a caller that may insert the id next
    /// hashes it once.
    @inlinable func position<Item: Identifiable>(of id: ID, hash: Int, in items: [Item]) -> Int?
    where Item.ID == ID {
        guard count > 0 else { return nil }
        let tag = Self.tag(of: hash)
        var slot = self.slot(of: hash)
        while true {
            let found = self.tag(at: slot)
            if found == 0 { return nil }
            if found == tag {
                let position = Int(storage[slot])
                if position < items.count, items[position].id == id { return position }
            }
            slot += 1
            if slot == size { slot = 0 }
        }
    }

    /// Indexes `id`, not indexed yet, at `position`; `items` holds every indexed item (a growing table reads
    /// their ids).
    @inlinable mutating func insert<Item: Identifiable>(_ id: ID, at position: Int, in items: [Item])
    where Item.ID == ID {
        insert(hash: id.hashValue, at: position, in: items)
    }

    /// Indexes the id whose `hashValue` is `hash`, not indexed yet, at `position`.
    @inlinable mutating func insert<Item: Identifiable>(hash: Int, at position: Int, in items: [Item])
    where Item.ID == ID {
        reserve(count + 1, in: items)
        place(hash, position)
        count += 1
    }

    /// Makes room for `needed` entries at once (for a page), so the table grows at most once for it.
    @inlinable mutating func reserve<Item: Identifiable>(_ needed: Int, in items: [Item]) where Item.ID == ID {
        guard needed * 4 > size * 3 else { return }
        let old = self
        size = max(16, needed * 2)
        storage = Array(repeating: 0, count: size + (size + 3) / 4)
        for slot in 0..<old.size where old.tag(at: slot) != 0 {
            let position = Int(old.storage[slot])
            place(items[position].id.hashValue, position)
        }
    }

    @inlinable mutating func place(_ hash: Int, _ position: Int) {
        var slot = self.slot(of: hash)
        while tag(at: slot) != 0 {
            slot += 1
            if slot == size { slot = 0 }
        }
        storage[size + slot >> 2] |= UInt32(Self.tag(of: hash)) << (UInt32(slot & 3) * 8)
        storage[slot] = UInt32(truncatingIfNeeded: position)
    }

    @inlinable func tag(at slot: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: storage[size + slot >> 2] >> (UInt32(slot & 3) * 8))
    }

    /// The home slot: the hash's high bits scaled to the table's size, which need not be a power of two.
    @inlinable func slot(of hash: Int) -> Int {
        Int(truncatingIfNeeded: scaledSlot(UInt(bitPattern: hash), slots: UInt(truncatingIfNeeded: size)))
    }

    @inlinable static func tag(of hash: Int) -> UInt8 { UInt8(truncatingIfNeeded: hash) | 0x80 }
}

/// `hash` scaled to `0..<slots` by its high bits: the high word of their full-width product, in the hash's own
/// width. Widening a 32-bit hash to 64 bits first (as the index once did) left every high word 0 on a 32-bit
/// `Int` (watchOS devices): every id in slot 0, every lookup a scan.
@inlinable internal func scaledSlot<Word: FixedWidthInteger & UnsignedInteger>(_ hash: Word, slots: Word) -> Word {
    hash.multipliedFullWidth(by: slots).high
}
