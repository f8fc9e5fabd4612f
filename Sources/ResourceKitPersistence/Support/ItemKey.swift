/// An item the outbox keeps changes of: its value type and its id. (The store has a key of its own for the same
/// pair; the two modules trade typed ids, not keys.)
///
/// `AnyHashable` is not `Sendable`, but every id put in one is: item ids are `Sendable`.
struct ItemKey: Hashable, @unchecked Sendable {
    let type: ObjectIdentifier
    let id: AnyHashable

    init(type: ObjectIdentifier, id: AnyHashable) {
        self.type = type
        self.id = id
    }

    /// Item `id` of `Item`.
    init<Item>(_ item: Item.Type, id: some Hashable & Sendable) {
        self.init(type: ObjectIdentifier(Item.self), id: AnyHashable(id))
    }
}
