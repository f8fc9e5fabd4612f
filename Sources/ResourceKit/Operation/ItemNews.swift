/// What an item is now, as one resource or list learnt it.
enum ItemFact<Item: Sendable>: Sendable {
    case value(Item)
    case removed
}

/// What a store-attached machine tells the other holders of an item, and what it hears from them.
///
/// A fact carries its rank: a holder takes it only when it is newer than what it shows for the item, so the
/// order in which news arrives does not matter. A layer is an optimistic change shown over the item until
/// the mutation that made it ends; it is display-only and carries no rank.
struct ItemNews<Item: Sendable, ID: Sendable>: Sendable {
    var id: ID
    var kind: ItemNewsKind<Item>
}

/// What happened to an item.
enum ItemNewsKind<Item: Sendable>: Sendable {
    /// The item as the server answered, at `rank`; `created` when a create answered it.
    case fact(ItemFact<Item>, rank: UInt64, created: Bool)
    /// An optimistic change `token` is shown over the item.
    case layer(token: UInt64, ItemFact<Item>)
    /// The optimistic change `token` ended: confirmed (its fact follows) or rolled back.
    case unlayer(token: UInt64)
}

/// A store-attached machine's news, whose ids the host fills in: a resource machine holds one item and does
/// not know its id type.
typealias ResourceNews<Value: Sendable> = ItemNews<Value, Void>

/// Draws the tokens that name optimistic changes.
enum LayerToken {
    static func next() -> UInt64 { nextRank() }
}

/// Where a list puts an item created elsewhere in the store.
public enum ListPlacement: Sendable, Equatable {
    /// Not in this list (the default): the list shows it once a page brings it.
    case none
    /// At the start of the list.
    case start
    /// At the end of the loaded items.
    case end
}
