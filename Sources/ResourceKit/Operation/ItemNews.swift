public import Synchronization

// `@inlinable` over `@usableFromInline internal` declarations, so that a client specializes the read path
// for its own types (unspecialized, it spends its time in generic metadata lookups): this makes them part
// of the module's API surface, and a change to them a change clients compile against.

/// What an item is now, as one resource or list learnt it.
@usableFromInline enum ItemFact<Item: Sendable>: Sendable {
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
@usableFromInline struct ItemNews<Item: Sendable, ID: Sendable>: Sendable {
    @usableFromInline var id: ID
    @usableFromInline var kind: ItemNewsKind
    @usableFromInline var value: Item?
    @usableFromInline var rank: UInt64 = 0
    @usableFromInline var created = false
    @usableFromInline var token: LayerToken?
    /// For a fact: the validators the server's answer gave this value (`ETag`, `Last-Modified`), when it gave
    /// any. The store keeps them as what it knows of the item's version (see `KnownVersions`); a fact without
    /// them leaves what is known as it is.
    @usableFromInline var validators: Validators?

    @inlinable init(
        id: ID, kind: ItemNewsKind, value: Item? = nil, rank: UInt64 = 0, created: Bool = false,
        token: LayerToken? = nil, validators: Validators? = nil
    ) {
        self.id = id
        self.kind = kind
        self.value = value
        self.rank = rank
        self.created = created
        self.token = token
        self.validators = validators
    }

    @inlinable static func fact(
        _ id: ID, _ fact: ItemFact<Item>, rank: UInt64, created: Bool = false, validators: Validators? = nil
    ) -> ItemNews {
        ItemNews(id: id, kind: .fact, value: fact.value, rank: rank, created: created, validators: validators)
    }

    /// An optimistic change; `created` when it shows an item a create will make (lists place it as they
    /// place created items).
    @inlinable static func layer(_ id: ID, token: LayerToken, _ fact: ItemFact<Item>, created: Bool = false)
        -> ItemNews
    {
        ItemNews(id: id, kind: .layer, value: fact.value, created: created, token: token)
    }

    @inlinable static func unlayer(_ id: ID, token: LayerToken) -> ItemNews {
        ItemNews(id: id, kind: .unlayer, token: token)
    }

    /// The fact or layer's change.
    @inlinable var fact: ItemFact<Item> { value.map { .value($0) } ?? .removed }

    /// The same news about another id type.
    @inlinable func with<Other: Sendable>(id other: Other) -> ItemNews<Item, Other> {
        ItemNews<Item, Other>(
            id: other, kind: kind, value: value, rank: rank, created: created, token: token, validators: validators)
    }
}

/// What an ``ItemNews`` says.
@usableFromInline enum ItemNewsKind: UInt8, Sendable {
    /// The item as the server answered (`value`, or removed when `nil`), at `rank`; `created` when a create
    /// answered it.
    case fact
    /// The optimistic change `token` (`value`, or a removal when `nil`) is shown over the item.
    case layer
    /// The optimistic change `token` ended: confirmed (its fact follows) or rolled back.
    case unlayer
}

extension ItemFact {
    @inlinable var value: Item? {
        if case .value(let value) = self { return value }
        return nil
    }
}

/// A store-attached machine's news, whose ids the host fills in: a resource machine holds one item and does
/// not know its id type.
@usableFromInline typealias ResourceNews<Value: Sendable> = ItemNews<Value, Void>

/// Names one optimistic change, and knows whether it has ended.
///
/// The holders of an item learn of a change's start and end as news, and the two can cross on the way: each
/// transition forwards its news after releasing its object's lock, so the end of a change cancelled on one
/// thread can reach a holder before its start, forwarded from another. The change is marked ended in the
/// same critical section that makes its end news, so a holder that checks the mark under its own lock either
/// adds the layer before the end reaches it, or sees the mark and never adds it: whatever the interleaving,
/// no layer outlives its change.
@usableFromInline final class LayerToken: Sendable, Equatable {
    @usableFromInline let ended = Atomic<Bool>(false)

    @inlinable init() {}

    /// Whether the change has ended (confirmed or rolled back).
    @inlinable var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// Marks the change ended; called by its own machine, in the transition that ends it.
    @inlinable func end() { ended.store(true, ordering: .releasing) }

    @inlinable static func == (lhs: LayerToken, rhs: LayerToken) -> Bool { lhs === rhs }
}

/// Where a list puts an item created elsewhere in the store.
///
/// A struct with static members, so that a later release can add placements (say, sorted by a key)
/// without breaking your code.
public struct ListPlacement: Sendable, Hashable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }

    /// Not in this list (the default): the list shows it once a page brings it.
    public static let omitted = ListPlacement("omitted")
    /// At the start of the list.
    public static let start = ListPlacement("start")
    /// At the end of the loaded items.
    public static let end = ListPlacement("end")

    /// The placement's name.
    public var description: String { name }
}
