import Synchronization

/// The version of a remote value: see ``RemoteResource/version(of:)``.
///
/// Numbers compare as numbers, text as text (by its UTF-8 bytes, which orders timestamps written the same
/// way, like PocketBase's `2026-12-01 16:22:36.971Z`), and any number is older than any text.
public struct ItemVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    private enum Kind: Hashable {
        case number(Int64)
        case text(String)
    }

    private let kind: Kind

    /// A version that is a number: a revision, a counter, a sequence number.
    /// - Parameter number: The number; a greater one is newer.
    public init(_ number: Int64) { kind = .number(number) }

    /// A version that is text, compared byte by byte: a timestamp written with a fixed width.
    /// - Parameter text: The text; a greater one is newer.
    public init(_ text: String) { kind = .text(text) }

    /// Whether `lhs` is older than `rhs`.
    public static func < (lhs: ItemVersion, rhs: ItemVersion) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.number(let left), .number(let right)): left < right
        case (.text(let left), .text(let right)): left.utf8.lexicographicallyPrecedes(right.utf8)
        case (.number, .text): true
        case (.text, .number): false
        }
    }

    /// The number, for a version that is one.
    package var number: Int64? { if case .number(let number) = kind { number } else { nil } }
    /// The text, for a version that is text.
    package var text: String? { if case .text(let text) = kind { text } else { nil } }

    /// The number or the text.
    public var description: String {
        switch kind {
        case .number(let number): "\(number)"
        case .text(let text): text
        }
    }
}

/// A change to an item that the server announced: what a live source (server-sent events, a WebSocket, a
/// push notification) hands to ``ResourceStore/apply(_:as:)``.
///
/// A struct with static members rather than an enum, so that a later release can add kinds of change
/// without breaking a `switch` in your code.
public struct LiveChange<Item: Identifiable & Sendable>: Sendable where Item.ID: Sendable {
    /// The item's id.
    public let id: Item.ID
    /// The item's new value; `nil` for a deletion.
    public let item: Item?
    /// Whether the item was made, rather than changed or deleted.
    public let isCreation: Bool

    private init(id: Item.ID, item: Item?, isCreation: Bool) {
        self.id = id
        self.item = item
        self.isCreation = isCreation
    }

    /// The item was made.
    /// - Parameter item: The new item.
    /// - Returns: The change.
    public static func created(_ item: Item) -> LiveChange { LiveChange(id: item.id, item: item, isCreation: true) }

    /// The item changed.
    /// - Parameter item: Its new value.
    /// - Returns: The change.
    public static func updated(_ item: Item) -> LiveChange { LiveChange(id: item.id, item: item, isCreation: false) }

    /// The item was deleted.
    /// - Parameter id: Its id.
    /// - Returns: The change.
    public static func deleted(_ id: Item.ID) -> LiveChange { LiveChange(id: id, item: nil, isCreation: false) }

    /// Whether the item was deleted.
    public var isDeletion: Bool { item == nil }
}

/// What a store's live objects hold of one item type: see ``ResourceStore/liveHolders(of:)``.
public struct LiveHolders<Item: Identifiable & Sendable>: Sendable where Item.ID: Sendable {
    /// Whether a live list holds items of the type: a source then follows the whole collection.
    public var hasLists: Bool
    /// The ids of the items that live resources hold.
    public var ids: [Item.ID]
    /// Whether nothing live holds the type: a source then follows none of it.
    public var isEmpty: Bool { !hasLists && ids.isEmpty }
}

extension ResourceStore {
    /// Shows a change the server announced in every live holder of the item, with no request.
    ///
    /// - An update replaces the item in every resource and list that holds it, and in the value the store
    ///   remembers for it; the value counts as just loaded, for freshness.
    /// - A creation goes into the lists whose ``Listable/placement(ofCreated:in:)`` places it, as a create in
    ///   the store does; a deletion removes the item from every list and empties its resources (`.idle`).
    /// - Order: the change is newer than every answer to a request asked before it arrived, so such an answer
    ///   arriving later never undoes it. When `Remote`, or any other type of the same value that the store has
    ///   made a resource or list of or applied a change as, tells versions (``RemoteResource/version(of:)``; the
    ///   first such type's), a change older than the value a holder shows is not applied to that holder,
    ///   however late it arrives; without versions, the change replaces what holders show (a push that lags
    ///   behind a local answer shows the older value until the next read or push). A deletion is always
    ///   applied.
    /// - An optimistic change shown over the item stays on top until its mutation ends, as with other news.
    /// - In a persistent store, the item's live resource persists the change; with none, the item's persisted
    ///   entry (of `Remote`) is removed, so that the next launch reads it rather than show an older value.
    ///
    /// - Parameters:
    ///   - change: The change.
    ///   - type: The remote type whose value the change is of; its ``RemoteResource/version(of:)`` orders it,
    ///     or else that of another type of the value the store knows.
    public func apply<Remote: RemoteResource>(_ change: LiveChange<Remote.Value>, as type: Remote.Type)
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable {
        apply(change, as: type, replacing: nil)
    }

    /// ``apply(_:as:)``; `placeholder` names the shown change of a create that this creation answers: a list
    /// that showed it puts the created item in its place. `validators` are those the server's answer
    /// gave the value (a change the outbox landed), when it gave any.
    package func apply<Remote: RemoteResource>(
        _ change: LiveChange<Remote.Value>, as type: Remote.Type, replacing placeholder: ChangeMark?,
        validators: Validators? = nil
    ) where Remote.Value: Identifiable, Remote.Value.ID: Sendable {
        let rank = nextRank()
        var news = ItemNews<Remote.Value, Remote.Value.ID>.fact(
            change.id, change.item.map { .value($0) } ?? .removed, rank: rank, created: change.isCreation,
            validators: change.item == nil ? nil : validators)
        news.token = placeholder?.token
        // Ordered by the versions of any type of the value the store knows, not only of the type given: a change
        // applied as a type without versions must not turn ordering off for holders of one with them.
        let own = change.item.flatMap { Remote.version(of: $0) }
        // With versions of its own, the type is learnt (for changes applied as other types) and nothing else is
        // needed; without, the value's other types are asked.
        let sources = withRegistry { registry -> [VersionSource] in
            guard own == nil else {
                registry.learnVersions(of: Remote.self)
                return []
            }
            return registry.versionSources[ObjectIdentifier(Remote.Value.self)] ?? []
        }
        let replaces: ((ItemNews<Remote.Value, Remote.Value.ID>, any Sendable) -> Bool)? =
            (own ?? change.item.flatMap { Self.version(of: $0, from: sources) }).map { incoming in
                { _, shown in
                    guard let shown = shown as? Remote.Value,
                        let current = Remote.version(of: shown) ?? Self.version(of: shown, from: sources)
                    else { return true }
                    return current <= incoming
                }
            }
        publish([news], from: ObjectIdentifier(self), replaces: replaces)
        // What an extension keeps of the item (a persisted value) may be out of date now.
        if !extensions.isEmpty {
            let resource = StoreKey(type: ObjectIdentifier(Remote.self), id: AnyHashable(change.id))
            let isHeld = withRegistry { $0.resources[resource]?.object != nil }
            for storeExtension in extensions { storeExtension.pushed(Remote.self, id: change.id, isHeld: isHeld) }
        }
    }

    /// The version the first of `sources` that gives one gives `value`.
    private static func version(of value: any Sendable, from sources: [VersionSource]) -> ItemVersion? {
        for source in sources {
            if let version = source.version(value) { return version }
        }
        return nil
    }

    /// What the store's live objects hold of `Remote`'s values: what a live source follows.
    /// - Parameter type: The remote type whose values ``RemoteResource/Value`` to look for.
    /// - Returns: Whether any live list holds items of that type, and the ids of the items live resources hold
    ///   (in no particular order).
    public func liveHolders<Remote: RemoteResource>(of type: Remote.Type) -> LiveHolders<Remote.Value>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable {
        let itemType = ObjectIdentifier(Remote.Value.self)
        return withRegistry { registry in
            // Holders made before the last wipe show the wiped user's items: nothing follows them.
            let generation = registry.generation
            let lists = (registry.listsByItem[itemType] ?? [:]).values.contains {
                $0.generation == generation && $0.object != nil
            }
            var ids: [Remote.Value.ID] = []
            for (key, holders) in registry.resourcesByItem where key.type == itemType {
                if let id = key.id.base as? Remote.Value.ID,
                    holders.values.contains(where: { $0.generation == generation && $0.object != nil })
                {
                    ids.append(id)
                }
            }
            return LiveHolders(hasLists: lists, ids: ids)
        }
    }

    /// A stream that yields whenever a resource or list of the store is made or freed, and when the store is
    /// wiped (``wipe()``): where a live source learns that what it follows (``liveHolders(of:)``) may have
    /// changed. It keeps the newest signal only,
    /// and ends when the reading task is cancelled.
    public func membershipChanges() -> AsyncStream<Void> {
        membershipWatchers.stream(\.self, buffering: .bufferingNewest(1)) { _ in
            // Set once, under the watchers' lock: from then on each change takes that lock, and yields to
            // nobody once every watcher left.
            self.isWatched.store(true, ordering: .releasing)
            return (nil, false)
        }
    }

    /// Tells the watchers of ``membershipChanges()``; nearly free when there are none.
    func membershipChanged() {
        guard isWatched.load(ordering: .acquiring) else { return }
        membershipWatchers.withLock { $0.yield(()) }
    }
}
