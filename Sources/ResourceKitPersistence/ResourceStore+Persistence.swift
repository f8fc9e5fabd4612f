import Foundation
import ResourceKit
import Synchronization

extension StorePersistence {
    /// The value a resource starts from, persisted by an earlier run, or `nil` when there is none that decodes
    /// (an entry of another schema, or one that no longer decodes, is removed, and the item is read again).
    func restore<Value: Sendable>(_ hooks: PersistenceHooks<Value>) -> RestoredValue<Value>? {
        guard let entry = entry(for: hooks.key) else { return nil }
        guard entry.schema == hooks.schema, let value = hooks.decode(entry.value) else {
            remove(hooks.key)
            return nil
        }
        let validators = Validators(entityTag: entry.entityTag, lastModified: entry.lastModified)
        return RestoredValue(
            value: value, age: age(of: entry), validators: entry.validatorsDescribeValue ? validators : nil,
            knownValidators: validators)
    }

    /// How long ago an entry was loaded, on the wall clock; `nil` for one persisted as stale (dated
    /// `distantPast`). A value from the future is new.
    func age(of entry: PersistedEntry) -> Duration? {
        guard entry.loadedAt != .distantPast else { return nil }
        return .seconds(min(max(0, now().timeIntervalSince(entry.loadedAt)), Duration.longest / .seconds(1)))
    }
}

extension ResourceStore {
    /// What queues a resource's value for persistence after the server's value of its item changed: the value
    /// shown, with its validators and the wall-clock time it was loaded, or a removal once the item is gone.
    ///
    /// On the caller's path it only marks the resource dirty, once per write: the writer takes the value
    /// the resource shows when it writes (so a value that changes many times before then is written once).
    /// The queued write holds the resource until then, so that a value is not lost when its resource is freed.
    static func persister<Remote: Readable>(
        _ hooks: PersistenceHooks<Remote.Value>, _ persistence: StorePersistence
    ) -> @Sendable (Resource<Remote>, _ removed: Bool) -> Void {
        let dirty = DirtyFlag()
        let generation = persistence.currentGeneration
        return { resource, removed in
            // Made before a wipe: what it shows belongs to the wiped data.
            guard persistence.currentGeneration == generation else { return }
            guard !removed else {
                dirty.clear()
                persistence.remove(hooks.key)
                return
            }
            guard dirty.mark() else { return }
            queueWrite(of: resource, hooks, persistence, dirty)
        }
    }

    /// Queues the write of what `resource` shows when the writer takes it.
    static func queueWrite<Remote: Readable>(
        of resource: Resource<Remote>, _ hooks: PersistenceHooks<Remote.Value>, _ persistence: StorePersistence,
        _ dirty: DirtyFlag
    ) {
        persistence.save(hooks.key) {
            // Cleared before the value is taken: a change after this point queues another write.
            dirty.clear()
            guard let snapshot = resource.persistedSnapshot() else { return nil }
            guard let data = hooks.encode(snapshot.value) else { return nil }
            // A value marked stale is dated long ago, so that it is stale after a restart too.
            let loadedAt = snapshot.age.map { persistence.now().addingTimeInterval(-($0 / .seconds(1))) }
            // The value's own validators, or else what the store knows of the item's version: a change made on
            // the value after a restart is still conditional on them.
            let validators = snapshot.validators
            var entry = PersistedEntry(
                key: hooks.key, value: data, entityTag: validators?.entityTag,
                lastModified: validators?.lastModified, loadedAt: loadedAt ?? .distantPast, schema: hooks.schema)
            entry.validatorsDescribeValue = snapshot.validatorsDescribeValue
            return entry
        }
    }
}

/// Whether a resource's value waits in the write queue.
final class DirtyFlag: Sendable {
    private let dirty = Atomic<Bool>(false)

    /// Marks it dirty; `true` when it was not already.
    func mark() -> Bool { !dirty.exchange(true, ordering: .acquiringAndReleasing) }

    func clear() { dirty.store(false, ordering: .releasing) }
}

/// How a store's list of one `Remote` type persists its items: made when the items are `Codable`.
struct ListPersistenceHooks<Remote: Listable>: Sendable {
    let key: String
    let encode: @Sendable ([Remote.Item]) -> Data?
    let decode: @Sendable (Data) -> [Remote.Item]?

    /// The hooks of the list for the request named `request`, or `nil` when its items are not `Codable`.
    init?(request: String) {
        guard [Remote.Item].self is any Codable.Type else { return nil }
        key = "list:\(PersistenceSettings.name(of: Remote.self))/\(request)"
        encode = { ($0 as? any Encodable).flatMap { try? entryEncoder.encode($0) } }
        decode = { data in
            guard let decodable = [Remote.Item].self as? any Decodable.Type else { return nil }
            return (try? entryDecoder.decode(decodable, from: data)) as? [Remote.Item]
        }
    }
}

extension ResourceStore {
    /// The items a list starts from, persisted by an earlier run, and when they were loaded on the session's
    /// clock; `nil` when there are none that decode (an entry that no longer decodes is removed).
    func restoreList<Remote: Listable>(
        _ hooks: ListPersistenceHooks<Remote>, from persistence: StorePersistence
    ) -> (items: [Remote.Item], loadedAt: Duration?)? {
        let limit = PersistenceSettings.itemLimit(of: Remote.self)
        guard limit > 0, let entry = persistence.entry(for: hooks.key) else { return nil }
        guard let items = hooks.decode(entry.value) else {
            persistence.remove(hooks.key)
            return nil
        }
        let loadedAt = persistence.age(of: entry).map { session.now - $0 }
        return (Array(items.prefix(limit)), loadedAt)
    }

    /// What queues a list's items for persistence after they may have changed: its first
    /// ``PersistedResource/persistedItemLimit`` settled items (never an optimistic change), taken by the writer when it
    /// writes, as for a resource.
    static func listPersister<Remote: Listable>(
        _ hooks: ListPersistenceHooks<Remote>, _ persistence: StorePersistence
    ) -> @Sendable (ListResource<Remote>, _ removed: Bool) -> Void {
        let dirty = DirtyFlag()
        let generation = persistence.generation.load(ordering: .acquiring)
        let limit = PersistenceSettings.itemLimit(of: Remote.self)
        return { list, _ in
            guard limit > 0, persistence.generation.load(ordering: .acquiring) == generation else { return }
            guard dirty.mark() else { return }
            persistence.save(hooks.key) {
                dirty.clear()
                // The queued write holds the list until then, so that its items are not lost when it is freed.
                guard let (items, age) = list.settledItems(limit: limit), let data = hooks.encode(items) else {
                    return nil
                }
                // Dated when its first page was loaded, not when it was written: news that changed an item since
                // does not make the whole list newer. An invalidated list is written stale.
                let loadedAt = age.map { persistence.now().addingTimeInterval(-($0 / .seconds(1))) } ?? .distantPast
                return PersistedEntry(key: hooks.key, value: data, loadedAt: loadedAt)
            }
        }
    }
}
