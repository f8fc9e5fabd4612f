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
///
/// Flat fields rather than an enum with payloads: news is read in generic code on every holder, where each
/// tuple payload would cost a run-time metadata lookup.
struct ItemNews<Item: Sendable, ID: Sendable>: Sendable {
    var id: ID
    var kind: ItemNewsKind
    var value: Item?
    var rank: UInt64 = 0
    var created = false
    var token: UInt64 = 0

    static func fact(_ id: ID, _ fact: ItemFact<Item>, rank: UInt64, created: Bool = false) -> ItemNews {
        ItemNews(id: id, kind: .fact, value: fact.value, rank: rank, created: created)
    }

    static func layer(_ id: ID, token: UInt64, _ fact: ItemFact<Item>) -> ItemNews {
        ItemNews(id: id, kind: .layer, value: fact.value, token: token)
    }

    static func unlayer(_ id: ID, token: UInt64) -> ItemNews { ItemNews(id: id, kind: .unlayer, token: token) }

    /// The fact or layer's change.
    var fact: ItemFact<Item> { value.map { .value($0) } ?? .removed }

    /// The same news about another id type.
    func with<Other: Sendable>(id other: Other) -> ItemNews<Item, Other> {
        ItemNews<Item, Other>(id: other, kind: kind, value: value, rank: rank, created: created, token: token)
    }
}

/// What an ``ItemNews`` says.
enum ItemNewsKind: UInt8, Sendable {
    /// The item as the server answered (`value`, or removed when `nil`), at `rank`; `created` when a create
    /// answered it.
    case fact
    /// The optimistic change `token` (`value`, or a removal when `nil`) is shown over the item.
    case layer
    /// The optimistic change `token` ended: confirmed (its fact follows) or rolled back.
    case unlayer
}

extension ItemFact {
    var value: Item? {
        if case .value(let value) = self { return value }
        return nil
    }
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
