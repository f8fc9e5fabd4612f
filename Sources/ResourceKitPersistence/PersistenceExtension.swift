import Foundation
public import ResourceKit

extension ResourceStore {
    /// Creates a store that keeps its values between runs, and with an outbox, the changes made while the
    /// server is unreachable.
    /// - Parameters:
    ///   - session: The session for every resource and list of the store.
    ///   - capacity: The total cost of the freed resources' values to remember (see
    ///     `ResourceStore.init(session:capacity:)`).
    ///   - persistence: Where to keep `Codable` values between runs, so that a resource made after a restart
    ///     starts from its last value; `nil` keeps nothing.
    public convenience init(session: NetworkSession, capacity: Int = 1_000, persistence: StorePersistence?) {
        self.init(
            session: session, capacity: capacity,
            extensions: persistence.map { [PersistenceExtension($0)] } ?? [])
    }

    /// Where the store keeps values between runs, if anywhere: see ``StorePersistence``.
    public var persistence: StorePersistence? { storeExtension(PersistenceExtension.self)?.persistence }

    /// The changes made while the server was unreachable, kept until they reach it: present when the
    /// ``persistence`` has an outbox storage. See ``Outbox`` and ``OfflineQueueing``.
    public var outbox: Outbox? { storeExtension(PersistenceExtension.self)?.outbox }
}

/// Persistence and the outbox, plugged into a store: what the store calls at each point of a holder's life.
///
/// A value is persisted when it is `Codable`, whatever the code that asked the store for its resource knows of
/// its type: the check is made when the holder is made, not by the overload a call picks.
final class PersistenceExtension: StoreExtension {
    let persistence: StorePersistence
    let outbox: Outbox?

    init(_ persistence: StorePersistence) {
        self.persistence = persistence
        outbox = persistence.outboxStorage.map { Outbox(storage: $0) }
    }

    func attach(to store: ResourceStore) {
        outbox?.attach(store)
        // Before anything can change: the kept changes of these types show from the store's first holder on.
        for queueing in persistence.queueing { outbox?.register(queueing.lane()) }
        outbox?.reportUnclaimed(to: store.session.configuration.logger)
    }

    func restoredValue<Remote: Readable>(of type: Remote.Type, id: Remote.Value.ID, store: ResourceStore)
        -> RestoredValue<Remote.Value>?
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID {
        guard let hooks = PersistenceHooks<Remote.Value>(Remote.self, id: id) else { return nil }
        return persistence.restore(hooks)
    }

    func extend<Remote: Readable>(_ type: Remote.Type, id: Remote.Value.ID, store: ResourceStore)
        -> HolderHooks<Resource<Remote>>
    where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID {
        HolderHooks(
            afterChange: PersistenceHooks<Remote.Value>(Remote.self, id: id).map {
                ResourceStore.persister($0, persistence)
            },
            mutations: outbox.map {
                OutboxLink(
                    outbox: $0, remoteType: ObjectIdentifier(Remote.self),
                    item: ItemKey(Remote.Value.self, id: id))
            })
    }

    func shownChanges<Item: Identifiable & Sendable>(of type: Item.Type, id: Item.ID?) -> [ShownChange<Item>]
    where Item.ID: Sendable {
        // The changes the outbox keeps show in a holder made now too.
        outbox?.shownChanges(ofType: ObjectIdentifier(Item.self), item: id.map { ItemKey(Item.self, id: $0) })
            .compactMap { $0 as? ShownChange<Item> }
            ?? []
    }

    func restoredItems<Remote: Listable>(of type: Remote.Type, request: String, store: ResourceStore)
        -> (items: [Remote.Item], loadedAt: Duration?)?
    {
        guard let hooks = ListPersistenceHooks<Remote>(request: request) else { return nil }
        return store.restoreList(hooks, from: persistence)
    }

    func extend<Remote: Listable>(_ type: Remote.Type, request: String, store: ResourceStore)
        -> HolderHooks<ListResource<Remote>>
    {
        HolderHooks(
            afterChange: ListPersistenceHooks<Remote>(request: request).map {
                ResourceStore.listPersister($0, persistence)
            },
            mutations: outbox.map {
                // The item is filled in per change: a list holds many.
                OutboxLink(
                    outbox: $0, remoteType: ObjectIdentifier(Remote.self),
                    item: ItemKey(Remote.Item.self, id: 0))
            })
    }

    func pushed<Remote: RemoteResource>(_ type: Remote.Type, id: some Hashable & Sendable, isHeld: Bool) {
        // A persisted value of the item that no live resource of the type keeps current is out of date now:
        // removed, so that a later launch reads the item instead of showing what it was.
        guard !isHeld, Remote.self is any Readable.Type else { return }
        persistence.remove(PersistenceHooks<Remote.Value>.key(PersistenceSettings.name(of: Remote.self), id))
    }

    func wipe() async throws(NetworkError) {
        try await outbox?.wipe()
        try await persistence.wipe()
    }
}
