import Synchronization

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
    var token: LayerToken?

    static func fact(_ id: ID, _ fact: ItemFact<Item>, rank: UInt64, created: Bool = false) -> ItemNews {
        ItemNews(id: id, kind: .fact, value: fact.value, rank: rank, created: created)
    }

    static func layer(_ id: ID, token: LayerToken, _ fact: ItemFact<Item>) -> ItemNews {
        ItemNews(id: id, kind: .layer, value: fact.value, token: token)
    }

    static func unlayer(_ id: ID, token: LayerToken) -> ItemNews { ItemNews(id: id, kind: .unlayer, token: token) }

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

/// Names one optimistic change, and knows whether it has ended.
///
/// The holders of an item learn of a change's start and end as news, and the two can cross on the way: each
/// transition forwards its news after releasing its object's lock, so the end of a change cancelled on one
/// thread can reach a holder before its start, forwarded from another. The change is marked ended in the
/// same critical section that makes its end news, so a holder that checks the mark under its own lock either
/// adds the layer before the end reaches it, or sees the mark and never adds it: whatever the interleaving,
/// no layer outlives its change.
final class LayerToken: Sendable, Equatable {
    private let ended = Atomic<Bool>(false)

    /// Whether the change has ended (confirmed or rolled back).
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// Marks the change ended; called by its own machine, in the transition that ends it.
    func end() { ended.store(true, ordering: .releasing) }

    static func == (lhs: LayerToken, rhs: LayerToken) -> Bool { lhs === rhs }
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
