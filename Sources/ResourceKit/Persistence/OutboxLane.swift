import Foundation

/// What the outbox does with the changes of one `Remote` type: made by ``ResourceStore/queueWhenOffline(_:)``,
/// where the types are known.
protocol OutboxLane: Sendable {
    /// The type's ``Readable/persistenceName``: what names it in a stored change.
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
    /// Shows what the server answered to a change in every holder.
    func land(_ record: OutboxRecord, answer: any Sendable, in store: ResourceStore)
}

struct TypedOutboxLane<Remote: Readable>: OutboxLane
where Remote.Value: Identifiable & Codable, Remote.Value.ID: Codable & Sendable {
    typealias Value = Remote.Value
    typealias News = ItemNews<Value, Value.ID>

    let name = Remote.persistenceName
    let remoteType = ObjectIdentifier(Remote.self)
    /// How an update's answer becomes the value, where `Remote` is `Updatable`.
    let update: (@Sendable (Endpoint, NetworkSession) async throws(NetworkError) -> Value)?
    /// How a deletion's answer becomes the value (`nil`: gone), where `Remote` is `Deletable`.
    let delete: (@Sendable (Endpoint, NetworkSession) async throws(NetworkError) -> Value?)?

    init() {
        update = (Remote.self as? any Updatable.Type).map { Self.updater($0) }
        delete = (Remote.self as? any Deletable.Type).map { Self.deleter($0) }
    }

    private static func updater<U: Updatable>(_ type: U.Type)
        -> @Sendable (Endpoint, NetworkSession)
        async throws(NetworkError) -> Value
    {
        { endpoint, session throws(NetworkError) in
            let response = try await session.send(endpoint, as: U.UpdateResponse.self)
            guard let value = try U.value(fromUpdate: response) as? Value else {
                throw .invalidResponse("\(U.self)'s update answered another type than \(Value.self)")
            }
            return value
        }
    }

    private static func deleter<D: Deletable>(_ type: D.Type)
        -> @Sendable (Endpoint, NetworkSession)
        async throws(NetworkError) -> Value?
    {
        { endpoint, session throws(NetworkError) in
            let response = try await session.send(endpoint, as: D.DeleteResponse.self)
            return try D.value(fromDelete: response) as? Value
        }
    }

    func encode(id: AnyHashable, value: (any Sendable)?) -> (item: Data, value: Data?)? {
        guard let id = id.base as? Value.ID, let item = try? JSONEncoder().encode(id) else { return nil }
        guard let value else { return (item, nil) }
        guard let value = value as? Value, let data = try? JSONEncoder().encode(value) else { return nil }
        return (item, data)
    }

    private func id(of record: OutboxRecord) -> Value.ID? {
        try? JSONDecoder().decode(Value.ID.self, from: record.item)
    }

    func itemKey(of record: OutboxRecord) -> StoreKey? {
        id(of: record).map { StoreKey(type: ObjectIdentifier(Value.self), id: AnyHashable($0)) }
    }

    func layer(of record: OutboxRecord, token: LayerToken) -> (item: StoreKey, news: any Sendable)? {
        guard let id = id(of: record) else { return nil }
        let fact: ItemFact<Value>
        if record.isDeletion {
            fact = .removed
        } else {
            guard let data = record.value, let value = try? JSONDecoder().decode(Value.self, from: data) else {
                return nil
            }
            fact = .value(value)
        }
        return (StoreKey(type: ObjectIdentifier(Value.self), id: AnyHashable(id)), News.layer(id, token: token, fact))
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
        if record.isDeletion {
            guard let delete else { throw .invalidRequest("\(Remote.self) is not Deletable") }
            do {
                return try await delete(record.endpoint, session)
            } catch  where error.statusCode == 404 {
                // Already gone: the deletion landed (an earlier attempt, or someone else).
                return Value?.none
            }
        }
        guard let update else { throw .invalidRequest("\(Remote.self) is not Updatable") }
        return Optional(try await update(record.endpoint, session))
    }

    func land(_ record: OutboxRecord, answer: any Sendable, in store: ResourceStore) {
        guard let id = id(of: record), let answer = answer as? Value? else { return }
        store.apply(answer.map { .updated($0) } ?? .deleted(id), as: Remote.self)
    }
}

extension ResourceStore {
    /// Keeps the updates and deletes of `type` that fail because the server is unreachable in the store's
    /// ``outbox``, instead of failing them: see ``Outbox``. Call it at every launch, before the first change;
    /// it also shows the changes of `type` kept by an earlier run in every holder. Without an outbox (see
    /// ``StorePersistence/init(storage:outbox:writeDelay:now:)``) it does nothing.
    /// - Parameter type: The remote type; its value and id must be `Codable`, to be kept on disk.
    public func queueWhenOffline<Remote: Readable>(_ type: Remote.Type)
    where Remote.Value: Identifiable & Codable, Remote.Value.ID: Codable & Sendable {
        outbox?.register(TypedOutboxLane<Remote>())
    }
}
