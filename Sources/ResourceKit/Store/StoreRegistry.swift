/// A type and an id: a resource's identity (its `Remote` type) or an item's (its value type).
///
/// `AnyHashable` is not `Sendable`, but every id put in one is: item ids and list requests are `Sendable`.
struct StoreKey: Hashable, @unchecked Sendable {
    let type: ObjectIdentifier
    let id: AnyHashable
    /// Hashed once, when the key is made: a resource asks the registry about its key on every answer, and hashing
    /// an `AnyHashable` goes through its box each time.
    private let hash: Int

    init(type: ObjectIdentifier, id: AnyHashable) {
        self.type = type
        self.id = id
        var hasher = Hasher()
        hasher.combine(type)
        hasher.combine(id)
        hash = hasher.finalize()
    }

    static func == (lhs: StoreKey, rhs: StoreKey) -> Bool {
        lhs.hash == rhs.hash && lhs.type == rhs.type && lhs.id == rhs.id
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

/// What the store remembers of a resource nobody holds any more: its value and how fresh it was.
struct CachedItem: Sendable {
    var value: any Sendable
    var rank: UInt64
    var loadedAt: Duration?
    var validators: Validators?
    /// The read that loaded the value, if one did (a value a resource only started from has none).
    var readKey: RequestKey?
    /// What it counts against the store's capacity.
    var cost: Int
}

/// A resource or list that lives in a store.
protocol StoreMember: AnyObject, Sendable {
    /// News of items from another holder: `[ResourceNews<Value>]` for a resource, `[ItemNews<Item, Item.ID>]`
    /// for a list.
    func hear(_ news: any Sendable)
    /// Marks stale what `matches` accepts (the value, or an item of the list); `everything` marks it stale
    /// whatever it holds. Returns whether anything was marked.
    func markStale(everything: Bool, where matches: (any Sendable) -> Bool) -> Bool
    /// Whether a `states` stream observes it.
    var isObserved: Bool { get }
    /// Loads its value or first page again; `ifStale`, a resource only when its value is not fresh by its type's
    /// `maxAge` (a list always).
    func refetch(ifStale: Bool) async
    /// What it shows of item `id` outside any optimistic change, that answer's rank, and when it was loaded if
    /// the holder vouches that a resource may start from it as fresh (a list whose items are complete).
    func known(_ id: AnyHashable) -> (value: any Sendable, rank: UInt64, loadedAt: Duration?)?
    /// What a snapshot shows of it.
    func inspect() -> ObjectInspection
}

/// A live holder, held weakly: the store keeps no holder alive. A class, so that the registry's tables share one
/// and reading a holder out of a table costs a retain: copying a weak reference costs two atomic operations on
/// the holder's side table, for every holder that news reaches.
final class WeakMember {
    weak var object: (any StoreMember)?
    /// The store's wipe generation when it was made: after a wipe, what it shows belongs to the wiped data.
    let generation: UInt64

    init(object: any StoreMember, generation: UInt64) {
        self.object = object
        self.generation = generation
    }
}

/// A store's object that was freed; its `deinit` queued this for the store to apply.
enum Released: Sendable {
    case resource(key: StoreKey, item: StoreKey, object: ObjectIdentifier, remembered: CachedItem?)
    case list(key: StoreKey, itemType: ObjectIdentifier, object: ObjectIdentifier)
}

/// A `Remote` type's ``RemoteResource/version(of:)``, over any value.
struct VersionSource: Sendable {
    let remote: ObjectIdentifier
    let version: @Sendable (any Sendable) -> ItemVersion?
}

/// The store's tables, behind its lock.
struct StoreRegistry {
    /// Live resources by `Remote` type and id.
    var resources: [StoreKey: WeakMember] = [:]
    /// Live resources by item: value type and id (several `Remote` types may read one item).
    var resourcesByItem: [StoreKey: [ObjectIdentifier: WeakMember]] = [:]
    /// Live lists by `Remote` type and request.
    var lists: [StoreKey: WeakMember] = [:]
    /// Live lists by item type.
    var listsByItem: [ObjectIdentifier: [ObjectIdentifier: WeakMember]] = [:]
    /// The values of resources nobody holds, by item.
    var cache: LRUCache<StoreKey, CachedItem>
    /// How many times the store was wiped. Members made before the last wipe show what they showed until they
    /// are freed, but nothing of theirs reaches the store again: a new resource does not start from them, a
    /// freed one is not remembered, and asking for their key makes a new member.
    var generation: UInt64 = 0
    /// By value type: the `Remote` types of it that the store has made a holder of or applied a change as, each
    /// with its ``RemoteResource/version(of:)``, in the order first seen. A pushed change of the value is
    /// ordered by the first of them that gives a version, whichever type it was applied as.
    var versionSources: [ObjectIdentifier: [VersionSource]] = [:]
    /// What the store knows of each item's version on the server: see ``KnownVersions``.
    var versions = KnownVersions()

    /// The member under `key` in `table`, if it is alive and made since the last wipe.
    func current(_ key: StoreKey, in table: [StoreKey: WeakMember]) -> (any StoreMember)? {
        guard let member = table[key], member.generation == generation else { return nil }
        return member.object
    }

    /// Forgets freed objects and remembers their values.
    ///
    /// Their `deinit` only queues them: it can run while this lock is held, when the registry drops the last
    /// strong reference it briefly took from a weak one, and the lock is not recursive.
    mutating func apply(_ released: [Released]) {
        for entry in released {
            switch entry {
            case .resource(let key, let item, let object, let remembered):
                if resources[key]?.object == nil { resources[key] = nil }
                let born = resourcesByItem[item]?.removeValue(forKey: object)?.generation
                if resourcesByItem[item]?.isEmpty == true { resourcesByItem[item] = nil }
                if let remembered, born == generation { cache.insert(remembered, for: item, cost: remembered.cost) }
            case .list(let key, let itemType, let object):
                if lists[key]?.object == nil { lists[key] = nil }
                listsByItem[itemType]?[object] = nil
                if listsByItem[itemType]?.isEmpty == true { listsByItem[itemType] = nil }
            }
        }
    }

    /// The live lists of items of `itemType`, but `origin`.
    func liveLists(of itemType: ObjectIdentifier, besides origin: ObjectIdentifier) -> [any StoreMember] {
        guard let members = listsByItem[itemType] else { return [] }
        var lists: [any StoreMember] = []
        lists.reserveCapacity(members.count)
        for (identifier, member) in members where identifier != origin {
            if let list = member.object { lists.append(list) }
        }
        return lists
    }

    /// Whether news of `item` from the resource `origin` reaches anything: another resource of the item, a list
    /// of its type, or a remembered value.
    func reachesAnyone(_ item: StoreKey, besides origin: ObjectIdentifier) -> Bool {
        if listsByItem[item.type] != nil { return true }
        // One lookup: the holders' table comes out by reference, and is counted and searched in place.
        if let holders = resourcesByItem[item], holders.count > 1 || holders.index(forKey: origin) == nil {
            return true
        }
        return cache.contains(item)
    }

    /// The newest value a live holder knows of an item: a new resource of it starts from there.
    func newestKnown(_ item: StoreKey) -> (value: any Sendable, rank: UInt64, loadedAt: Duration?)? {
        let generation = self.generation
        var members = (resourcesByItem[item] ?? [:]).values.filter { $0.generation == generation }.compactMap(\.object)
        members += (listsByItem[item.type] ?? [:]).values.filter { $0.generation == generation }.compactMap(\.object)
        var newest: (value: any Sendable, rank: UInt64, loadedAt: Duration?)?
        for member in members {
            guard let known = member.known(item.id), known.rank >= newest?.rank ?? 1 else { continue }
            if let current = newest, known.rank == current.rank {
                // The same news in two holders: it is as fresh as the one that vouches least for it (a preview
                // list's copy, or another type's, not at all).
                newest?.loadedAt = current.loadedAt.flatMap { mine in known.loadedAt.map { min(mine, $0) } }
            } else {
                newest = known
            }
        }
        return newest
    }

    /// Learns what `news` says of `item`'s version, and prunes the records of items nothing holds any more
    /// once they outgrew their threshold.
    mutating func learnVersion<V, ID>(_ news: ItemNews<V, ID>, of item: StoreKey) {
        guard news.kind == .fact else { return }
        learnVersion(of: item, validators: news.validators, removed: news.value == nil, rank: news.rank)
    }

    /// Learns the validators (or the removal) of `item` at `rank`; see ``KnownVersions/learn(_:validators:removed:rank:)``.
    mutating func learnVersion(of item: StoreKey, validators: Validators?, removed: Bool, rank: UInt64) {
        guard versions.learn(item, validators: validators, removed: removed, rank: rank) else { return }
        let generation = self.generation
        versions.prune { key in
            if resourcesByItem[key] != nil || cache.contains(key) { return true }
            return (listsByItem[key.type] ?? [:]).values.contains { member in
                member.generation == generation && member.object?.known(key.id) != nil
            }
        }
    }

    /// Adds `Remote` to the version sources of its value type, once.
    mutating func learnVersions<Remote: RemoteResource>(of type: Remote.Type) {
        let valueType = ObjectIdentifier(Remote.Value.self)
        guard versionSources[valueType]?.contains(where: { $0.remote == ObjectIdentifier(Remote.self) }) != true
        else { return }
        versionSources[valueType, default: []].append(
            VersionSource(remote: ObjectIdentifier(Remote.self)) { ($0 as? Remote.Value).flatMap(Remote.version) })
    }

    /// Applies what a holder learnt to the remembered value of an item.
    mutating func remember<V: Sendable>(_ news: ItemNews<V, some Sendable>, of item: StoreKey, now: Duration) {
        let rank = news.rank
        guard news.kind == .fact, let cached = cache.peek(item), rank > cached.rank else { return }
        switch news.value {
        case nil: cache.removeValue(for: item)
        case let value?:
            // The new value keeps the old one's cost: the holder that learnt it knows no `Remote` type to ask.
            cache.update(item) { entry in
                entry = CachedItem(
                    value: value, rank: rank, loadedAt: now, validators: news.validators, readKey: entry.readKey,
                    cost: entry.cost)
            }
        }
    }
}
