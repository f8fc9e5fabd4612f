import Foundation
import Synchronization

/// How a store's resource reaches its store; made where the item's id type is known.
///
/// The closures hold the store strongly: a member keeps its store alive, so news keeps flowing between the
/// members however the app holds them. The store holds its members weakly, so there is no cycle.
// `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) reaches it, part of the API surface.
@usableFromInline struct ResourceLink<Remote: RemoteResource>: Sendable {
    /// The read of the resource's item: the only one it may send.
    @usableFromInline let readKey: RequestKey?
    @usableFromInline let publish: @Sendable (Resource<Remote>, [ResourceNews<Remote.Value>]) -> Void
    let refetch: @Sendable (Resource<Remote>, ReadPolicy) async -> Void
    /// Called from `deinit`, with the value to remember.
    let release: @Sendable (ObjectIdentifier, ResourceMachine<Remote.Value>.Snapshot?) -> Void
    /// What the store knows of the item's version (``KnownVersions``); `nil` for a resource made before the
    /// store's last wipe.
    let knownValidators: @Sendable () -> Validators?
    /// What a store extension runs after the server's value of the resource's item changed, with whether the
    /// server has removed it (persistence queues the value shown); `nil` when none does.
    @usableFromInline var afterChange: (@Sendable (Resource<Remote>, _ removed: Bool) -> Void)? = nil
    /// The rank of the value the resource started from, when it came from a store extension (persistence).
    var restoredRank: UInt64? = nil
    /// What runs its changes, when a store extension does (the outbox).
    var mutations: (any MutationWrapping)? = nil
}

extension ResourceLink {
    /// Tells the link's extension (``afterChange``) that `news` changed the server's value of the item, if it did.
    @inlinable func reportChange(of resource: Resource<Remote>, in news: [ResourceNews<Remote.Value>]) {
        guard let afterChange, let fact = news.last(where: { $0.kind == .fact }) else { return }
        afterChange(resource, fact.value == nil)
    }
}

/// A value held by reference: its holder reads a field of it in place, without copying the rest.
final class Held<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// How a store's list reaches its store.
struct ListLink<Remote: Listable>: Sendable {
    let publish: @Sendable (ListResource<Remote>, [ItemNews<Remote.Item, Remote.Item.ID>]) -> Void
    /// Hands the list news from other holders; made in the client's module (see `list(_:request:)`).
    let hear: @Sendable (ListResource<Remote>, any Sendable) -> Void
    let release: @Sendable (ObjectIdentifier) -> Void
    /// What the store knows of the version of item `id` (``KnownVersions``); `nil` for a list made before the
    /// store's last wipe.
    let knownValidators: @Sendable (AnyHashable) -> Validators?
    /// What a store extension runs after the items the list shows may have changed (persistence queues them);
    /// `nil` when none does.
    var afterNews: (@Sendable (ListResource<Remote>, _ removed: Bool) -> Void)? = nil
    /// What runs its changes, when a store extension does (the outbox).
    var mutations: (any MutationWrapping)? = nil
    /// Whether the items the list started from came from the store's persistence.
    var isRestored = false
    /// When they were loaded, on the session's clock (`nil` when that is unknown).
    var restoredAt: Duration? = nil
}

extension ResourceStore {
    /// The live resource of item `id`, made if none is alive.
    ///
    /// Every call with the same `Remote` type and id returns the same object while anyone holds it, so its
    /// callers share one state and one request. A new one starts from the value the store remembers for the
    /// item, if any (see ``capacity``), or, in a store made with ResourceKitPersistence's `persistence:`, the
    /// value kept on disk (of a `Codable` value), or `.idle`; the changes that store's outbox keeps of the item
    /// show over it.
    /// - Parameters:
    ///   - type: The remote type; its read request is the item's id.
    ///   - id: The item's id.
    /// - Returns: The resource.
    // `@inlinable`: the check that a resource's news is of its own item runs on every read, and is made here, in
    // the client's module, so that it runs specialized (unspecialized, it was half of what a read in a store
    // cost on top of a bare read).
    @inlinable
    public func resource<Remote: Readable>(_ type: Remote.Type, id: Remote.Value.ID) -> Resource<Remote>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID {
        resource(type, id: id) { news in
            var teachesVersion = false
            for position in news.indices where news[position].kind == .fact {
                if let other = news[position].value?.id, other != id { return (false, true) }
                teachesVersion = teachesVersion || news[position].teachesVersion
            }
            return (true, teachesVersion)
        }
    }

    @usableFromInline func resource<Remote: Readable>(
        _ type: Remote.Type, id: Remote.Value.ID,
        isOwnItem: @escaping @Sendable ([ResourceNews<Remote.Value>]) -> (isOwn: Bool, teachesVersion: Bool)
    ) -> Resource<Remote>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID {
        let key = StoreKey(type: ObjectIdentifier(Remote.self), id: AnyHashable(id))
        let item = StoreKey(type: ObjectIdentifier(Remote.Value.self), id: AnyHashable(id))
        let readKey = (try? Remote.readEndpoint(for: id))?.requestKey
        // Made before a wipe that comes later, its news reaches no one: what it shows is the wiped user's.
        let born = wipes.load(ordering: .acquiring)
        var link = ResourceLink<Remote>(
            readKey: readKey,
            publish: { resource, news in
                guard self.wipes.load(ordering: .relaxed) == born else { return }
                self.publish(
                    news, of: item, id: id, from: ObjectIdentifier(resource), isOwnItem: isOwnItem,
                    label: { resource.cachedLabel })
            },
            refetch: { resource, policy in _ = try? await resource.read(id, policy: policy) },
            release: { identifier, snapshot in
                let remembered = snapshot.map {
                    CachedItem(
                        value: $0.value, rank: $0.rank, loadedAt: $0.loadedAt, validators: $0.validators,
                        readKey: $0.loadedKey, cost: Remote.cost(of: $0.value))
                }
                self.released.withLock {
                    $0.append(.resource(key: key, item: item, object: identifier, remembered: remembered))
                }
                self.membershipChanged()
            },
            knownValidators: {
                guard self.wipes.load(ordering: .relaxed) == born else { return nil }
                return self.withRegistry { $0.versions[item] }
            })
        let session = session
        var made = false
        defer { if made { membershipChanged() } }
        defer {
            // What an extension shows of the item (the outbox's kept changes) shows in a resource made now too.
            if made, !extensions.isEmpty,
                let resource = withRegistry({ $0.resources[key]?.object as? Resource<Remote> })
            {
                let layers = shownLayers(of: Remote.Value.self, id: id)
                if !layers.isEmpty { resource.hear(layers.map { $0.with(id: ()) }) }
            }
        }
        // A value an extension keeps (persistence), read outside the registry's lock (it may wait for the disk),
        // when nothing in memory could start the resource instead.
        var restored: RestoredValue<Remote.Value>?
        if !extensions.isEmpty,
            withRegistry({
                $0.current(key, in: $0.resources) == nil && !$0.cache.contains(item) && $0.newestKnown(item) == nil
            })
        {
            for storeExtension in extensions where restored == nil {
                restored = storeExtension.restoredValue(of: Remote.self, id: id, store: self)
            }
        }
        return withRegistry { registry in
            if let existing = registry.current(key, in: registry.resources) as? Resource<Remote> { return existing }
            made = true
            registry.learnVersions(of: Remote.self)
            var machine = ResourceMachine<Remote.Value>(
                state: .idle, sharing: .init(key: readKey, publishes: true))
            let cached = registry.cache.removeValue(for: item)
            if let live = registry.newestKnown(item), live.rank > cached?.rank ?? 0,
                let value = live.value as? Remote.Value
            {
                // Another holder shows the item (a list, or another `Remote` type reading it): start from it,
                // stale, so that a fresh-only read still asks the server, unless the holder is a list whose items
                // are whole values (`Listable.itemsAreComplete`): then as fresh as its page.
                machine = ResourceMachine(
                    state: .available(value),
                    sharing: .init(key: readKey, publishes: true), settledRank: live.rank, loadedAt: live.loadedAt)
            } else if let cached, let value = cached.value as? Remote.Value {
                machine = ResourceMachine(
                    state: .available(value),
                    sharing: .init(key: readKey, publishes: true), settledRank: cached.rank,
                    loadedAt: cached.loadedAt, validators: cached.readKey == readKey ? cached.validators : nil,
                    loadedKey: cached.readKey == readKey ? readKey : nil)
            } else if let restored {
                // Rank 0, older than every answer of this run: an answer to a request sent before the resource was
                // made (a list's page, say) still replaces it.
                machine = ResourceMachine(
                    state: .available(restored.value),
                    sharing: .init(key: readKey, publishes: true), settledRank: 0,
                    loadedAt: restored.age.map { session.now - $0 }, validators: restored.validators,
                    loadedKey: readKey)
                link.restoredRank = 0
                registry.learnVersion(of: item, validators: restored.knownValidators, removed: false, rank: 0)
            }
            if let validators = machine.validators {
                // What the value it starts from was given with is known of the item, unless something newer is.
                registry.learnVersion(of: item, validators: validators, removed: false, rank: machine.settledRank)
            }
            let hooks = extensions.reduce(HolderHooks<Resource<Remote>>()) { hooks, storeExtension in
                hooks.then(storeExtension.extend(Remote.self, id: id, store: self))
            }
            link.afterChange = hooks.afterChange
            link.mutations = hooks.mutations.map { UnlessWiped(wrapped: $0, store: self, born: born) }
            let resource = Resource(session: session, machine: machine, link: link)
            let member = WeakMember(object: resource, generation: born)
            registry.resources[key] = member
            registry.resourcesByItem[item, default: [:]][ObjectIdentifier(resource)] = member
            return resource
        }
    }

    /// The live list for `request`, made if none is alive: every call with the same `Remote` type and request
    /// returns the same object while anyone holds it.
    /// - Parameters:
    ///   - type: The remote list type.
    ///   - request: What selects the list.
    /// - Returns: The list.
    // `@inlinable`, like the one below: the closure that hands a list the news of other holders is made here, in
    // the client's module, so the news path (`ListMachine.receive`) runs specialized for the client's item type.
    @inlinable
    public func list<Remote: Listable>(_ type: Remote.Type, request: Remote.ListRequest) -> ListResource<Remote>
    where Remote.ListRequest: Hashable {
        list(type, request: request, key: AnyHashable(request)) { list, news in list.receive(storeNews: news) }
    }

    /// The live list of a type whose lists need no request.
    /// - Parameter type: The remote list type.
    /// - Returns: The list.
    @inlinable
    public func list<Remote: Listable>(_ type: Remote.Type) -> ListResource<Remote> where Remote.ListRequest == Void {
        list(type, request: (), key: AnyHashable(0)) { list, news in list.receive(storeNews: news) }
    }

    @usableFromInline func list<Remote: Listable>(
        _ type: Remote.Type, request: Remote.ListRequest, key id: AnyHashable,
        hear: @escaping @Sendable (ListResource<Remote>, any Sendable) -> Void
    ) -> ListResource<Remote> {
        let key = StoreKey(type: ObjectIdentifier(Remote.self), id: id)
        let itemType = ObjectIdentifier(Remote.Item.self)
        let born = wipes.load(ordering: .acquiring)
        var link = ListLink<Remote>(
            publish: { list, news in
                guard self.wipes.load(ordering: .relaxed) == born else { return }
                self.publish(news, from: ObjectIdentifier(list)) { list.cachedLabel }
            },
            hear: hear,
            release: { identifier in
                self.released.withLock { $0.append(.list(key: key, itemType: itemType, object: identifier)) }
                self.membershipChanged()
            },
            knownValidators: { id in
                guard self.wipes.load(ordering: .relaxed) == born else { return nil }
                return self.withRegistry { $0.versions[StoreKey(type: itemType, id: id)] }
            })
        let session = session
        var made = false
        defer { if made { membershipChanged() } }
        defer {
            // What an extension shows of the type's items (the outbox's kept changes) shows in a list made now too.
            if made, !extensions.isEmpty, let list = withRegistry({ $0.lists[key]?.object as? ListResource<Remote> }) {
                let layers = shownLayers(of: Remote.Item.self, id: nil)
                if !layers.isEmpty { list.hear(layers) }
            }
        }
        // Items an extension keeps (persistence), read outside the registry's lock, when no live list has the
        // request.
        var restored: (items: [Remote.Item], loadedAt: Duration?)?
        // A list that needs no request is named by nothing.
        let requestName = request is Void ? "" : "\(request)"
        if !extensions.isEmpty, withRegistry({ $0.current(key, in: $0.lists) == nil }) {
            for storeExtension in extensions where restored == nil {
                restored = storeExtension.restoredItems(of: Remote.self, request: requestName, store: self)
            }
        }
        let hooks = extensions.reduce(HolderHooks<ListResource<Remote>>()) { hooks, storeExtension in
            hooks.then(storeExtension.extend(Remote.self, request: requestName, store: self))
        }
        link.afterNews = hooks.afterChange
        link.mutations = hooks.mutations.map { UnlessWiped(wrapped: $0, store: self, born: born) }
        return withRegistry { registry in
            if let existing = registry.current(key, in: registry.lists) as? ListResource<Remote> { return existing }
            made = true
            registry.learnVersions(of: Remote.self)
            var state = ListState<Remote.Item>()
            if let restored {
                // One page, whatever it held: the next page's key is not kept, so a next page reloads the first.
                state = ListState(content: .available(restored.items), pagination: PaginationStatus(pagesLoaded: 1))
                link.isRestored = true
                link.restoredAt = restored.loadedAt
            }
            let list = ListResource(session: session, request: request, state: state, link: link)
            let member = WeakMember(object: list, generation: born)
            registry.lists[key] = member
            registry.listsByItem[itemType, default: [:]][ObjectIdentifier(list)] = member
            return list
        }
    }
}

extension Resource {
    /// What a store extension keeps of the resource: its settled value, or the value a failure keeps; how long
    /// ago it was loaded, on the session's clock (`nil`: it is stale); and the validators a change of it is
    /// made on: the value's own, or else what the store knows of the item's version (``KnownVersions``), with
    /// whether they are the value's own (a conditional read may send only those).
    package func persistedSnapshot()
        -> (value: Value, age: Duration?, validators: Validators?, validatorsDescribeValue: Bool)?
    {
        guard let snapshot = storage.withLock({ $0.machine.persistedSnapshot() }) else { return nil }
        // After the resource's lock: the store's versions are behind the registry's.
        let validators = snapshot.validators ?? link?.knownValidators()
        let now = session.now
        return (
            snapshot.value, snapshot.loadedAt.map { max(.zero, now - $0) }, validators,
            snapshot.validators != nil || validators == nil
        )
    }
}

extension ListResource {
    /// What a store extension keeps of the list: its first `limit` settled items (never an optimistic
    /// change), once a page loaded, and how long ago its first page was loaded (the restored items' age while
    /// none was; `nil` once invalidated).
    package func settledItems(limit: Int) -> (items: [Item], age: Duration?)? {
        let now = session.now
        let restoredAge = restoredAge
        return storage.withLock { storage -> (items: [Item], age: Duration?)? in
            guard storage.machine.settled.pagination.pagesLoaded > 0, let items = storage.machine.settled.content.value
            else { return nil }
            let age = storage.machine.loadedAt.map { max(.zero, now - $0) } ?? restoredAge
            return (Array(items.prefix(limit)), age)
        }
    }
}

extension Resource: StoreMember {
    func hear(_ news: any Sendable) {
        guard let news = news as? [ResourceNews<Value>] else { return }
        let now = session.now
        run(transition { machine, _ in machine.receive(news, now: now) })
        link?.reportChange(of: self, in: news)
    }

    func markStale(everything: Bool, where matches: (any Sendable) -> Bool) -> Bool {
        storage.withLock { storage in
            guard everything || storage.machine.state.value.map(matches) == true else { return false }
            storage.machine.invalidate()
            return true
        }
    }

    var isObserved: Bool { observerCount > 0 }

    func refetch(ifStale: Bool) async { await link?.refetch(self, ifStale ? .skipIfFresh(maxAge: nil) : .always) }

    func known(_ id: AnyHashable) -> (value: any Sendable, rank: UInt64, loadedAt: Duration?)? {
        // Another `Remote` type's read of the item may answer another shape of it: a resource made from it
        // starts stale. A failure's kept value counts: it is what the resource shows of the item, and a pushed
        // value older than it must not replace it.
        storage.withLock { $0.machine.persistedSnapshot() }.map { ($0.value, $0.rank, nil) }
    }

    func inspect() -> ObjectInspection { inspect { $0.inspection } }
}

extension ListResource: StoreMember {
    func hear(_ news: any Sendable) {
        // Through the list's own copies of the link's two closures: binding the link copied (and retained) every
        // closure it holds, and reading them through the link loaded one more object, for each list news reaches.
        guard let hearNews else { return receive(storeNews: news) }
        hearNews(self, news)
        afterNews?(self, false)
    }

    func markStale(everything: Bool, where matches: (any Sendable) -> Bool) -> Bool {
        storage.withLock { storage in
            guard everything || storage.machine.holds(where: { matches($0) }) else { return false }
            // A resource made from the list's copy of an item starts stale from now on.
            storage.machine.loadedAt = nil
            return true
        }
    }

    var isObserved: Bool { observerCount > 0 }

    func refetch(ifStale: Bool) async { _ = try? await refresh() }

    func known(_ id: AnyHashable) -> (value: any Sendable, rank: UInt64, loadedAt: Duration?)? {
        guard let id = id.base as? Item.ID else { return nil }
        // Only whole values are as fresh as their page; a resource starts stale from another list's copy.
        return storage.withLock { $0.machine.known(id) }.map {
            ($0.item, $0.rank, Remote.itemsAreComplete ? $0.loadedAt : nil)
        }
    }

    func inspect() -> ObjectInspection { inspect { $0.inspection } }
}
