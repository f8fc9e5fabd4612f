import Foundation
public import ResourceKit

/// What the outbox does with the changes of one `Remote` type: made by ``OfflineQueueing/resources(_:)``,
/// where the types are known.
protocol OutboxLane: Sendable {
    /// The type's `Readable.persistenceName`: what names it in a stored change.
    var name: String { get }
    var remoteType: ObjectIdentifier { get }
    /// Encodes an item's id and a value to show (`nil` when there is none); `nil` when either fails.
    func encode(id: AnyHashable, value: (any Sendable)?) -> (item: Data, value: Data?)?
    /// The store's key of a stored change's item.
    func itemKey(of record: OutboxRecord) -> StoreKey?
    /// The layer a stored change shows over its item, or `nil` when it shows nothing.
    func layer(of record: OutboxRecord, token: LayerToken) -> (item: StoreKey, news: any Sendable)?
    func publish(_ layer: any Sendable, in store: ResourceStore)
    func unlayer(_ layer: any Sendable, in store: ResourceStore)
    /// Sends a stored change; returns what it answered (`Value?`, boxed).
    func send(_ record: OutboxRecord, in session: NetworkSession) async throws(NetworkError) -> any Sendable
    /// Shows what the server answered to a change in every holder; `placeholder` is the change's layer.
    func land(_ record: OutboxRecord, answer: any Sendable, placeholder: LayerToken?, in store: ResourceStore)
    /// Marks a change's item stale, and reads it again where it is observed.
    func refresh(_ record: OutboxRecord, in store: ResourceStore) async
}

/// The lane of a type whose items are `Item`: how its changes are encoded, shown, sent and landed.
struct ItemOutboxLane<Item: Identifiable & Codable & Sendable>: OutboxLane where Item.ID: Codable & Sendable {
    typealias News = ItemNews<Item, Item.ID>
    typealias Sender<Answer> = @Sendable (Endpoint, NetworkSession) async throws(NetworkError) -> Answer

    let name: String
    let remoteType: ObjectIdentifier
    /// How an update's answer becomes the item, where the type is `Updatable`.
    let update: Sender<Item>?
    /// How a deletion's answer becomes the item (`nil`: gone), where the type is `Deletable`.
    let delete: Sender<Item?>?
    /// How a create's answer becomes the new item, where the type is `Creatable` (lists only).
    var create: Sender<Item>? = nil
    /// Shows a landed change in every holder, as a push of the type would be; a create's answer takes the
    /// place of the placeholder named.
    let apply: @Sendable (ResourceStore, LiveChange<Item>, LayerToken?) -> Void

    /// The lane of a `Readable` type (changes through its resources).
    init<Remote: Readable>(resources type: Remote.Type) where Remote.Value == Item {
        name = Remote.persistenceName
        remoteType = ObjectIdentifier(Remote.self)
        update = (Remote.self as? any Updatable.Type).map { Self.updater($0) }
        delete = (Remote.self as? any Deletable.Type).map { Self.deleter($0) }
        apply = { store, change, placeholder in store.apply(change, as: Remote.self, replacing: placeholder) }
    }

    /// The lane of a `Listable` type (changes through its lists).
    init<Remote: Listable>(lists type: Remote.Type) where Remote.Item == Item {
        name = "list:" + String(reflecting: Remote.self)
        remoteType = ObjectIdentifier(Remote.self)
        update = (Remote.self as? any Updatable.Type).map { Self.updater($0) }
        delete = (Remote.self as? any Deletable.Type).map { Self.deleter($0) }
        create = (Remote.self as? any Creatable.Type).map { Self.creator($0) }
        // By item type: what a list holds is its items, whatever `Remote.Value` says.
        apply = { store, change, placeholder in store.apply(change, as: ItemsOf<Item>.self, replacing: placeholder) }
    }

    private static func updater<U: Updatable>(_ type: U.Type) -> Sender<Item> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.send(endpoint, as: U.UpdateResponse.self)
            guard let item = try U.value(fromUpdate: response) as? Item else {
                throw .invalidResponse("\(U.self)'s update answered another type than \(Item.self)")
            }
            return item
        }
    }

    private static func creator<C: Creatable>(_ type: C.Type) -> Sender<Item> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.send(endpoint, as: C.CreateResponse.self)
            guard let item = try C.value(fromCreate: response) as? Item else {
                throw .invalidResponse("\(C.self)'s create answered another type than \(Item.self)")
            }
            return item
        }
    }

    private static func deleter<D: Deletable>(_ type: D.Type) -> Sender<Item?> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.send(endpoint, as: D.DeleteResponse.self)
            return try D.value(fromDelete: response) as? Item
        }
    }

    func encode(id: AnyHashable, value: (any Sendable)?) -> (item: Data, value: Data?)? {
        guard let id = id.base as? Item.ID, let item = try? JSONEncoder().encode(id) else { return nil }
        guard let value else { return (item, nil) }
        guard let value = value as? Item, let data = try? JSONEncoder().encode(value) else { return nil }
        return (item, data)
    }

    private func id(of record: OutboxRecord) -> Item.ID? { try? JSONDecoder().decode(Item.ID.self, from: record.item) }

    func itemKey(of record: OutboxRecord) -> StoreKey? {
        // A create names no item of the server's: the id it holds is that of the item it shows meanwhile.
        guard !record.isCreation else { return nil }
        return id(of: record).map { StoreKey(type: ObjectIdentifier(Item.self), id: AnyHashable($0)) }
    }

    func layer(of record: OutboxRecord, token: LayerToken) -> (item: StoreKey, news: any Sendable)? {
        // A create shows its optimistic item, if it was given one, where each list places created items.
        guard let id = id(of: record) else { return nil }
        let fact: ItemFact<Item>
        if record.isDeletion {
            fact = .removed
        } else {
            guard let data = record.value, let value = try? JSONDecoder().decode(Item.self, from: data) else {
                return nil
            }
            fact = .value(value)
        }
        return (
            StoreKey(type: ObjectIdentifier(Item.self), id: AnyHashable(id)),
            News.layer(id, token: token, fact, created: record.isCreation)
        )
    }

    func publish(_ layer: any Sendable, in store: ResourceStore) {
        guard let news = layer as? News else { return }
        store.publish([news], from: remoteType)
    }

    func unlayer(_ layer: any Sendable, in store: ResourceStore) {
        guard let news = layer as? News, let token = news.token else { return }
        store.publish([News.unlayer(news.id, token: token)], from: remoteType)
    }

    func send(_ record: OutboxRecord, in session: NetworkSession) async throws(NetworkError) -> any Sendable {
        if record.isCreation {
            guard let create else { throw .invalidRequest("\(name) is not Creatable") }
            return Optional(try await create(record.endpoint, session))
        }
        if record.isDeletion {
            guard let delete else { throw .invalidRequest("\(name) is not Deletable") }
            do {
                return try await delete(record.endpoint, session)
            } catch  where error.statusCode == 404 {
                // Already gone: the deletion landed (an earlier attempt, or someone else).
                return Item?.none
            }
        }
        guard let update else { throw .invalidRequest("\(name) is not Updatable") }
        return Optional(try await update(record.endpoint, session))
    }

    func land(_ record: OutboxRecord, answer: any Sendable, placeholder: LayerToken?, in store: ResourceStore) {
        guard let answer = answer as? Item? else { return }
        if record.isCreation {
            // Placed in each list as a create in the store is (`placement(ofCreated:in:)`), or where the list
            // showed its placeholder.
            if let item = answer { apply(store, .created(item), placeholder) }
            return
        }
        guard let id = id(of: record) else { return }
        apply(store, answer.map { .updated($0) } ?? .deleted(id), nil)
    }

    func refresh(_ record: OutboxRecord, in store: ResourceStore) async {
        guard !record.isCreation, let id = id(of: record) else {
            // A create whose answer did not decode: its lists load again.
            await store.invalidate(ItemsOf<Item>.self)
            return
        }
        await store.invalidate(ItemsOf<Item>.self, id: id)
    }
}

/// The remote type of a list's items when a landed change is applied by item type: no versions, so ranks order
/// the change.
struct ItemsOf<Item: Sendable>: RemoteResource {
    typealias Value = Item
}

/// A type whose changes a store's ``Outbox`` keeps when the server is unreachable: what
/// ``StorePersistence/init(storage:outbox:queueWhenOffline:writeDelay:now:)`` takes, so that every launch that
/// configures the store configures its outbox too.
///
/// ```swift
/// let persistence = StorePersistence(
///     storage: try FileEntryStorage(directory: base.appendingPathComponent("entries")),
///     outbox: try FileEntryStorage(directory: base.appendingPathComponent("outbox")),
///     queueWhenOffline: [.resources(RemotePost.self), .list(RemoteFeed.self)])
/// ```
public struct OfflineQueueing: Sendable {
    let lane: @Sendable () -> any OutboxLane

    /// Keeps the updates and deletes made through the store's resources of `type` that fail because the
    /// server is unreachable, instead of failing them, and shows the changes of `type` kept by an earlier run
    /// in every holder: see ``Outbox``.
    /// - Parameter type: The remote type; its value and id must be `Codable`, to be kept on disk.
    /// - Returns: The configuration.
    public static func resources<Remote: Readable>(_ type: Remote.Type) -> OfflineQueueing
    where Remote.Value: Identifiable & Codable, Remote.Value.ID: Codable & Sendable {
        OfflineQueueing { ItemOutboxLane(resources: Remote.self) }
    }

    /// Keeps the creates, the optimistic updates and the deletes made through the store's lists of `type`
    /// that fail because the server is unreachable, as ``resources(_:)`` does for resources. An update
    /// without an `optimistic` item is not kept (the list cannot tell which item it changes). A kept create
    /// shows its placeholder (`ListResource.create(_:optimistic:)`) where the lists place created items, or
    /// nowhere without one; when it lands, the lists place the server's item as they place any create.
    /// - Parameter type: The remote list type; its items and their ids must be `Codable`.
    /// - Returns: The configuration.
    public static func list<Remote: Listable>(_ type: Remote.Type) -> OfflineQueueing
    where Remote.Item: Codable, Remote.Item.ID: Codable {
        OfflineQueueing { ItemOutboxLane(lists: Remote.self) }
    }
}
