import Synchronization

/// One source of truth for the items of an API: one live ``Resource`` per item, one ``ListResource`` per
/// request, and every answer about an item shown by every resource and list that holds it.
///
/// ```swift
/// let store = ResourceStore(session: session)
/// let post = store.resource(RemotePost.self, id: "42")      // the same object for every caller
/// let feed = store.list(RemotePosts.self)
/// try await post.update(edited)                            // `feed` shows the edit, with no request
/// ```
///
/// - Identity: `resource(_:id:)` returns the same object for the same `Remote` type and id while anyone
///   holds it, and `list(_:request:)` the same list for the same request. The store keeps them weakly:
///   an object nobody holds is freed.
/// - One truth: an item is its value type and its id. A read, create, update or delete that lands in one
///   holder is applied to every other live holder of the item, under the order rule of each: an answer older
///   than what a holder shows (asked before a change completed elsewhere) never replaces it.
/// - Memory: the values of freed resources are remembered, up to a total ``capacity`` (a number of values
///   unless ``Readable/cost(of:)`` says otherwise), least recently used first out; a resource made again for
///   such an item starts from its value. A resource freed while its last read had failed is remembered with
///   the value its failure kept, stale: the next fresh-only read asks the server.
public final class ResourceStore: Sendable {
    /// The session that sends every request of the store's resources and lists.
    public let session: NetworkSession
    /// The total cost (``Readable/cost(of:)``, 1 per value by default) of the values the store remembers
    /// for resources nobody holds.
    public let capacity: Int
    /// What modules beside the core add to the store (persistence, the outbox), called at fixed points of each
    /// holder's life: see ``StoreExtension``.
    let extensions: [any StoreExtension]

    private let registry: Locked<StoreRegistry>
    /// Freed objects, queued by their `deinit` for the next access to the registry.
    let released = Locked<[Released]>([])
    /// How many times the store was wiped, readable without its lock: what a member made before the last wipe
    /// checks before it publishes or keeps a change. Written only under the registry's lock, with
    /// ``StoreRegistry/generation``.
    let wipes = Atomic<UInt64>(0)
    /// Who learns that the store's live objects changed (a live source following them); see
    /// ``membershipChanges()``.
    let membershipWatchers = Locked(Subscribers<Void>())
    /// Whether anyone ever watched ``membershipChanges()``: until then a change takes no lock.
    let isWatched = Atomic<Bool>(false)

    /// Creates a store.
    /// - Parameters:
    ///   - session: The session for every resource and list of the store.
    ///   - capacity: The total cost of the freed resources' values to remember, least recently used first out:
    ///     a number of values unless a type's ``Readable/cost(of:)`` says otherwise; `0` remembers none, a
    ///     negative capacity counts as `0` and one above `Int.max / 2` as `Int.max / 2`. Live resources and lists
    ///     do not count: they are never evicted.
    public convenience init(session: NetworkSession, capacity: Int = 1_000) {
        self.init(session: session, capacity: capacity, extensions: [])
    }

    /// Creates a store with what modules beside the core add to it (ResourceKitPersistence's
    /// `ResourceStore(session:capacity:persistence:)` calls this).
    package init(session: NetworkSession, capacity: Int, extensions: [any StoreExtension]) {
        self.session = session
        self.capacity = min(max(0, capacity), Int.max >> 1)
        self.extensions = extensions
        registry = Locked(StoreRegistry(cache: LRUCache(capacity: max(0, capacity))))
        for storeExtension in extensions { storeExtension.attach(to: self) }
    }

    /// The first extension of type `E`, if the store has one.
    package func storeExtension<E: StoreExtension>(_ type: E.Type) -> E? {
        for storeExtension in extensions { if let found = storeExtension as? E { return found } }
        return nil
    }

    /// Removes what the store keeps of its items, in memory and on disk: the remembered values of freed
    /// resources and, in a store with a `StorePersistence` (ResourceKitPersistence), every queued write, every
    /// persisted entry and every change kept in the outbox (rolled back in every holder), leaving their
    /// directories empty: a logout. Live resources and lists keep what they show until they are freed, but
    /// nothing of theirs reaches the store again: they persist nothing, what they learn reaches no other
    /// holder, a change they make offline is not kept (it fails as without an outbox), a live source does not
    /// follow them, a freed one is not remembered, no new resource starts from what they show, and asking the
    /// store for their id or request after the wipe makes a new resource or list.
    /// - Throws: ``NetworkError/file(_:)`` when the persisted entries could not be removed.
    public func wipe() async throws(NetworkError) {
        withRegistry { registry in
            registry.cache = LRUCache(capacity: capacity)
            registry.versions.removeAll()
            registry.generation = wipes.add(1, ordering: .acquiringAndReleasing).newValue
        }
        // What a live source follows changed: the holders made before the wipe are no longer among them.
        membershipChanged()
        for storeExtension in extensions { try await storeExtension.wipe() }
    }

    /// The number of live resources and lists in the store.
    public var liveCount: Int {
        withRegistry { registry in registry.resources.count + registry.lists.count }
    }

    /// The number of values the store remembers for resources nobody holds.
    public var rememberedCount: Int { withRegistry { $0.cache.count } }

    /// The total cost of the values the store remembers; at most ``capacity``.
    public var rememberedCost: Int { withRegistry { $0.cache.totalCost } }

    /// Runs `body` on the registry, once the objects freed since the last access are forgotten.
    func withRegistry<R>(_ body: (inout StoreRegistry) -> R) -> R {
        let freed = released.withLock { released in
            defer { released = [] }
            return released
        }
        return registry.withLock { registry in
            if !freed.isEmpty { registry.apply(freed) }
            return body(&registry)
        }
    }

    // MARK: News

    /// Hands what the resource `origin` of item `id` (`item` in the registry) learnt to every other live holder.
    func publish<V: Identifiable & Sendable>(
        _ news: [ResourceNews<V>], of item: StoreKey, id: V.ID, from origin: ObjectIdentifier,
        isOwnItem: ([ResourceNews<V>]) -> (isOwn: Bool, teachesVersion: Bool), label: () -> String?
    ) where V.ID: Sendable {
        // Most news is of the resource's own item, and often nothing else holds it: then it reaches no one, and is
        // neither mapped nor published. (The check and the publishing below are two sections of the registry: a
        // holder made between them is one made just after this news, which starts from the newest value live
        // holders know.)
        // (`isOwnItem` is made in the client's module, specialized: see `resource(_:id:)`. It says whether the news
        // teaches the store anything of an item's version too, which, unspecialized here, was a copy of each news
        // on every read. News of another item is checked below, one by one.)
        let (isOwn, teaches) = isOwnItem(news)
        let reaches = withRegistry { registry in
            // What the news says of the item's version is the store's, whoever else holds the item.
            if teaches {
                for fact in news where fact.teachesVersion {
                    let key = isOwn ? item : StoreKey(type: item.type, id: AnyHashable(fact.value?.id ?? id))
                    registry.learnVersion(fact, of: key)
                }
            }
            return registry.reachesAnyone(item, besides: origin)
        }
        if !reaches, isOwn { return }
        // A value is news of its own id: an update that answered another item is that item's news.
        publish(
            news.map { news in news.with(id: news.kind == .fact ? news.value?.id ?? id : id) }, from: origin,
            label: label)
    }

    /// Hands what `origin` learnt about items to every other live holder of them.
    /// - Parameter replaces: For news from the server's push (see ``apply(_:as:)``): whether it may replace
    ///   the value a holder shows of its item (a version rule); `nil` leaves that to the ranks alone.
    func publish<V: Identifiable & Sendable>(
        _ news: [ItemNews<V, V.ID>], from origin: ObjectIdentifier, label: () -> String? = { nil },
        replaces: ((ItemNews<V, V.ID>, any Sendable) -> Bool)? = nil
    ) where V.ID: Sendable {
        let now = session.now
        let itemType = ObjectIdentifier(V.self)
        var resourceBatches: [ObjectIdentifier: (member: any StoreMember, news: [ResourceNews<V>])] = [:]
        var lists: [any StoreMember] = withRegistry { registry in
            for item in news {
                let key = StoreKey(type: itemType, id: AnyHashable(item.id))
                if let replaces, let cached = registry.cache.peek(key), !replaces(item, cached.value) { continue }
                if item.teachesVersion { registry.learnVersion(item, of: key) }
                registry.remember(item, of: key, now: now)
                for (identifier, weak) in registry.resourcesByItem[key] ?? [:] where identifier != origin {
                    guard let member = weak.object else { continue }
                    if let replaces, let known = member.known(key.id), !replaces(item, known.value) { continue }
                    resourceBatches[identifier, default: (member, [])].news.append(item.with(id: ()))
                }
            }
            return registry.liveLists(of: itemType, besides: origin)
        }
        // Boxed once, not once per list.
        let boxed: any Sendable = news
        if let replaces {
            // The holders that hear it: a list whose news all loses to what it shows hears nothing.
            var receivers = resourceBatches.count
            // Each list takes only the news that may replace what it shows: most often all of it, passed as it is,
            // with no array made for the list. Moved out of the array, as below.
            while let list = lists.popLast() {
                func replacesShown(_ item: ItemNews<V, V.ID>) -> Bool {
                    list.known(AnyHashable(item.id)).map { replaces(item, $0.value) } ?? true
                }
                if news.allSatisfy(replacesShown) {
                    list.hear(boxed)
                    receivers += 1
                } else {
                    let kept = news.filter(replacesShown)
                    if !kept.isEmpty {
                        list.hear(kept)
                        receivers += 1
                    }
                }
            }
            for (member, batch) in resourceBatches.values { member.hear(batch) }
            emitNews(count: news.count, receivers: receivers, label: label, of: V.self)
            return
        }
        let receivers = resourceBatches.count + lists.count
        for (member, batch) in resourceBatches.values { member.hear(batch) }
        // Each list is moved out of the array, which holds the only other reference the store took, rather than
        // copied out of it: a store's lists are weakly referenced, so each retain and release of one costs atomics
        // on its side table, and a copy cost a pair of them per list. (Lists are independent: the order they hear
        // the news in is the registry's, which has none.)
        while let list = lists.popLast() { list.hear(boxed) }
        emitNews(count: news.count, receivers: receivers, label: label, of: V.self)
    }

    private func emitNews<V>(count: Int, receivers: Int, label: () -> String?, of type: V.Type) {
        guard session.feed.isActive else { return }
        var record = DiagnosticRecord.objectEvent(.storeNews)
        record.setCount(count)
        record.setReceivers(receivers)
        session.feed.emit(record, about: .object(label(), itemType: TypeNames.name(of: V.self)))
    }

    /// The validators the store knows for item `id` of `Value` (see ``KnownVersions``): what a change of it is
    /// made on.
    func knownValidators<Value>(of type: Value.Type, id: AnyHashable) -> Validators? {
        withRegistry { $0.versions[StoreKey(type: ObjectIdentifier(Value.self), id: id)] }
    }

    // MARK: Invalidation

    /// Marks every value of `Remote.Value` stale, in resources and lists of any `Remote` type, and loads again
    /// the resources and lists that are observed (have a `states` stream). Returns when those loads end;
    /// their failures show in their states.
    /// - Parameter type: The remote type whose values are stale.
    public func invalidate<Remote: RemoteResource>(_ type: Remote.Type) async {
        await invalidate(itemType: ObjectIdentifier(Remote.Value.self), everything: true, id: nil) { _ in true }
    }

    /// Marks the item `id` stale and loads it again where it is observed: its resources, and the lists that
    /// hold it.
    /// - Parameters:
    ///   - type: The remote type of the item.
    ///   - id: The item's id.
    public func invalidate<Remote: RemoteResource>(_ type: Remote.Type, id: Remote.Value.ID) async
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable {
        await invalidate(itemType: ObjectIdentifier(Remote.Value.self), everything: false, id: AnyHashable(id)) {
            ($0 as? Remote.Value)?.id == id
        }
    }

    /// Marks stale the values `predicate` accepts and loads again where they are observed: resources holding
    /// such a value, and lists holding such an item.
    /// - Parameters:
    ///   - type: The remote type of the values.
    ///   - predicate: Whether a value is stale.
    public func invalidate<Remote: RemoteResource>(
        _ type: Remote.Type, where predicate: @escaping @Sendable (Remote.Value) -> Bool
    ) async {
        await invalidate(itemType: ObjectIdentifier(Remote.Value.self), everything: false, id: nil) { value in
            (value as? Remote.Value).map(predicate) ?? false
        }
    }

    private func invalidate(
        itemType: ObjectIdentifier, everything: Bool, id: AnyHashable?,
        matches: @escaping @Sendable (any Sendable) -> Bool
    ) async {
        let members: [any StoreMember] = withRegistry { registry in
            registry.cache.updateAll { key, entry in
                if key.type == itemType, everything || matches(entry.value) { entry.loadedAt = nil }
            }
            var members: [any StoreMember] = []
            for (key, holders) in registry.resourcesByItem where key.type == itemType && (id == nil || key.id == id) {
                members += holders.values.compactMap(\.object)
            }
            members += (registry.listsByItem[itemType] ?? [:]).values.compactMap(\.object)
            return members
        }
        let observed = members.filter { $0.markStale(everything: everything, where: matches) && $0.isObserved }
        await withTaskGroup(of: Void.self) { group in
            for member in observed { group.addTask { await member.refetch(ifStale: false) } }
        }
    }
}
