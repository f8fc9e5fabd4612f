import Foundation
import ResourceKit

/// What the outbox does with the changes of one `Remote` type: made by `OfflineQueueing.resources(_:…)`,
/// where the types are known.
protocol OutboxLane: Sendable {
    /// The type's ``PersistedResource/persistenceName``: what names it in a stored change.
    var name: String { get }
    var remoteType: ObjectIdentifier { get }
    /// Encodes an item's id and a value to show (`nil` when there is none); `nil` when either fails.
    func encode(id: AnyHashable, value: (any Sendable)?) -> (item: Data, value: Data?)?
    /// The store's key of a stored change's item.
    func itemKey(of record: OutboxRecord) -> ItemKey?
    /// What a stored change shows over its item (`ShownChange<Value>`, boxed), or `nil` when it shows nothing.
    func shownChange(of record: OutboxRecord, mark: ChangeMark) -> (item: ItemKey, change: any Sendable)?
    /// Shows a change `shownChange(of:mark:)` made in every holder of its item.
    func show(_ change: any Sendable, in store: ResourceStore)
    /// Withdraws a change `show(_:in:)` showed.
    func withdraw(_ change: any Sendable, in store: ResourceStore)
    /// How the type's replayed changes find a conflict.
    var detection: ConflictDetection { get }
    /// Whether the type's changes sent online carry the preconditions of their base too.
    var conditionalWhenOnline: Bool { get }
    /// A value of the type, JSON-encoded; `nil` when it is not one or does not encode.
    func encode(value: any Sendable) -> Data?
    /// Sends a stored change as `endpoint`; returns what it answered (`Value?`, boxed) and the base a later
    /// change of the item is made on.
    func send(_ record: OutboxRecord, as endpoint: Endpoint, in session: NetworkSession) async throws(NetworkError)
        -> LaneAnswer
    /// Reads the change's item as the server has it now (`value` `nil`: it has none).
    func current(of record: OutboxRecord, in session: NetworkSession) async throws(NetworkError) -> ServerSide
    /// Reads item `id` as the server has it now.
    func current(ofItem id: AnyHashable, in session: NetworkSession) async throws(NetworkError) -> ServerSide
    /// The server's item a `412` to `record` carried, if its body is that item.
    func serverSide(of error: NetworkError, for record: OutboxRecord) -> ServerSide?
    /// What the type's policy does with a conflict.
    func settle(_ record: OutboxRecord, against server: ServerSide) -> ConflictStep
    /// The change made into an update that sends `value` (a merge's, or the app's own).
    func rewrite(_ record: OutboxRecord, with value: any Sendable, in session: NetworkSession) throws(NetworkError)
        -> OutboxRecord
    /// What landing the server's side shows (`Value?`, boxed).
    func answer(of server: ServerSide) -> any Sendable
    /// Shows what the server answered to a change in every holder, with the validators its answer gave;
    /// `placeholder` is the change's layer.
    func land(
        _ record: OutboxRecord, answer: any Sendable, validators: Validators?, placeholder: ChangeMark?,
        in store: ResourceStore)
    /// Marks a change's item stale, and reads it again where it is observed.
    func refresh(_ record: OutboxRecord, in store: ResourceStore) async
}

/// The lane of a type whose items are `Item`: how its changes are encoded, shown, sent and landed.
struct ItemOutboxLane<Item: Identifiable & Codable & Sendable>: OutboxLane where Item.ID: Codable & Sendable {
    typealias Sender<Answer> = @Sendable (Endpoint, NetworkSession) async throws(NetworkError) -> (Answer, HTTPHeaders)
    typealias Reader = @Sendable (Item.ID, NetworkSession) async throws(NetworkError) -> (Item, HTTPHeaders)

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
    let apply: @Sendable (ResourceStore, LiveChange<Item>, ChangeMark?, Validators?) -> Void
    /// The item's version (`RemoteResource.version(of:)`).
    let version: @Sendable (Item) -> ItemVersion?
    /// Reads the item, where the type is `Readable` by its items' ids.
    var read: Reader? = nil
    /// Makes an update of a value (`Updatable.updateRequest(from:)`), where the type can.
    var updateOfValue: (@Sendable (Item) throws(NetworkError) -> Endpoint?)? = nil
    var policy: ConflictPolicy<Item> = .hold
    var detection: ConflictDetection = .preconditions
    var conditionalWhenOnline = true

    /// The lane of a `Readable` type (changes through its resources).
    init<Remote: Readable>(
        resources type: Remote.Type, policy: ConflictPolicy<Item> = .hold,
        detection: ConflictDetection = .preconditions,
        conditionalWhenOnline: Bool = true
    ) where Remote.Value == Item {
        name = PersistenceSettings.name(of: Remote.self)
        remoteType = ObjectIdentifier(Remote.self)
        update = (Remote.self as? any Updatable.Type).map { Self.updater($0) }
        delete = (Remote.self as? any Deletable.Type).map { Self.deleter($0) }
        apply = { store, change, placeholder, validators in
            store.apply(change, as: Remote.self, replacing: placeholder, validators: validators)
        }
        version = { Remote.version(of: $0) }
        read = Self.reader(Remote.self)
        updateOfValue = (Remote.self as? any Updatable.Type).map { Self.valueUpdater($0) }
        self.policy = policy
        self.detection = detection
        self.conditionalWhenOnline = conditionalWhenOnline
    }

    /// The lane of a `Listable` type (changes through its lists).
    init<Remote: Listable>(lists type: Remote.Type) where Remote.Item == Item {
        name = "list:" + PersistenceSettings.name(of: Remote.self)
        remoteType = ObjectIdentifier(Remote.self)
        update = (Remote.self as? any Updatable.Type).map { Self.updater($0) }
        delete = (Remote.self as? any Deletable.Type).map { Self.deleter($0) }
        create = (Remote.self as? any Creatable.Type).map { Self.creator($0) }
        // By item type: what a list holds is its items, whatever `Remote.Value` says.
        apply = { store, change, placeholder, validators in
            store.apply(change, as: ItemsOf<Item>.self, replacing: placeholder, validators: validators)
        }
        version = { item in (item as? Remote.Value).flatMap { Remote.version(of: $0) } }
    }

    /// The lane of a `Listable` type whose items `Reading` reads by id: its changes can be checked for conflicts.
    init<Remote: Listable, Reading: Readable>(
        lists type: Remote.Type, reading: Reading.Type, policy: ConflictPolicy<Item>, detection: ConflictDetection,
        conditionalWhenOnline: Bool
    ) where Remote.Item == Item, Reading.Value == Item {
        self.init(lists: type)
        read = Self.reader(Reading.self)
        updateOfValue = (Remote.self as? any Updatable.Type).map { Self.valueUpdater($0) }
        self.policy = policy
        self.detection = detection
        self.conditionalWhenOnline = conditionalWhenOnline
    }

    private static func updater<U: Updatable>(_ type: U.Type) -> Sender<Item> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.response(for: endpoint)
            guard let item = try U.value(fromUpdate: session.decode(U.UpdateResponse.self, from: response)) as? Item
            else {
                throw .invalidResponse("\(U.self)'s update answered another type than \(Item.self)")
            }
            return (item, response.headers)
        }
    }

    private static func creator<C: Creatable>(_ type: C.Type) -> Sender<Item> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.response(for: endpoint)
            guard let item = try C.value(fromCreate: session.decode(C.CreateResponse.self, from: response)) as? Item
            else {
                throw .invalidResponse("\(C.self)'s create answered another type than \(Item.self)")
            }
            return (item, response.headers)
        }
    }

    private static func deleter<D: Deletable>(_ type: D.Type) -> Sender<Item?> {
        { endpoint, session throws(NetworkError) in
            let response = try await session.response(for: endpoint)
            return (
                try D.value(fromDelete: session.decode(D.DeleteResponse.self, from: response)) as? Item,
                response.headers
            )
        }
    }

    private static func reader<R: Readable>(_ type: R.Type) -> Reader? where R.Value == Item {
        guard Item.ID.self == R.ReadRequest.self else { return nil }
        return { id, session throws(NetworkError) in
            guard let request = id as? R.ReadRequest else { throw .invalidRequest("\(R.self) is not read by id") }
            let response = try await session.response(for: R.readEndpoint(for: request))
            return (try R.value(fromRead: session.decode(R.ReadResponse.self, from: response)), response.headers)
        }
    }

    private static func valueUpdater<U: Updatable>(_ type: U.Type) -> @Sendable (Item) throws(NetworkError) -> Endpoint?
    {
        { item throws(NetworkError) in
            guard let value = item as? U.Value, let request = U.updateRequest(from: value) else { return nil }
            return try U.updateEndpoint(for: request)
        }
    }

    func encode(id: AnyHashable, value: (any Sendable)?) -> (item: Data, value: Data?)? {
        guard let id = id.base as? Item.ID, let item = try? JSONEncoder().encode(id) else { return nil }
        guard let value else { return (item, nil) }
        guard let value = value as? Item, let data = try? JSONEncoder().encode(value) else { return nil }
        return (item, data)
    }

    private func id(of record: OutboxRecord) -> Item.ID? { try? JSONDecoder().decode(Item.ID.self, from: record.item) }

    func itemKey(of record: OutboxRecord) -> ItemKey? {
        // A create names no item of the server's: the id it holds is that of the item it shows meanwhile.
        guard !record.isCreation else { return nil }
        return id(of: record).map { ItemKey(Item.self, id: $0) }
    }

    func shownChange(of record: OutboxRecord, mark: ChangeMark) -> (item: ItemKey, change: any Sendable)? {
        // A create shows its optimistic item, if it was given one, where each list places created items.
        guard let id = id(of: record) else { return nil }
        var value: Item?
        if !record.isDeletion {
            guard let data = record.value, let decoded = try? JSONDecoder().decode(Item.self, from: data) else {
                return nil
            }
            value = decoded
        }
        return (
            ItemKey(Item.self, id: id),
            ShownChange(id: id, value: value, isCreation: record.isCreation, mark: mark)
        )
    }

    func show(_ change: any Sendable, in store: ResourceStore) {
        guard let change = change as? ShownChange<Item> else { return }
        store.show(change)
    }

    func withdraw(_ change: any Sendable, in store: ResourceStore) {
        guard let change = change as? ShownChange<Item> else { return }
        store.withdraw(change)
    }

    /// Encodes values to compare them as bytes: keys sorted (`JSONEncoder` orders them by hash otherwise).
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    func encode(value: any Sendable) -> Data? {
        (value as? Item).flatMap { try? Self.encoder.encode($0) }
    }

    func send(_ record: OutboxRecord, as endpoint: Endpoint, in session: NetworkSession) async throws(NetworkError)
        -> LaneAnswer
    {
        let (item, headers): (Item?, HTTPHeaders)
        if record.isCreation {
            guard let create else { throw .invalidRequest("\(name) is not Creatable") }
            (item, headers) = try await create(endpoint, session)
        } else if record.isDeletion {
            guard let delete else { throw .invalidRequest("\(name) is not Deletable") }
            do {
                (item, headers) = try await delete(endpoint, session)
            } catch  where error.statusCode == 404 || error.statusCode == 410 {
                // Already gone: the deletion landed (an earlier attempt, or someone else).
                return LaneAnswer(answer: Item?.none, base: nil)
            }
        } else {
            guard let update else { throw .invalidRequest("\(name) is not Updatable") }
            (item, headers) = try await update(endpoint, session)
        }
        return LaneAnswer(answer: item, base: item.map { base(of: $0, headers: headers) })
    }

    private func base(of item: Item, headers: HTTPHeaders?) -> OutboxRecord.Base {
        OutboxRecord.Base(
            entityTag: headers?["ETag"], lastModified: headers?["Last-Modified"], version: version(item),
            value: try? Self.encoder.encode(item))
    }

    func current(of record: OutboxRecord, in session: NetworkSession) async throws(NetworkError) -> ServerSide {
        guard let id = id(of: record) else { throw .invalidRequest("the change names no item of \(name)") }
        return try await current(ofItem: AnyHashable(id), in: session)
    }

    func current(ofItem item: AnyHashable, in session: NetworkSession) async throws(NetworkError) -> ServerSide {
        guard let read else { throw .invalidRequest("\(name) cannot be read by its items' ids") }
        guard let id = item.base as? Item.ID else { throw .invalidRequest("\(item) is not an id of \(name)") }
        do {
            let (item, headers) = try await read(id, session)
            return ServerSide(value: try? Self.encoder.encode(item), base: base(of: item, headers: headers))
        } catch  where error.statusCode == 404 || error.statusCode == 410 {
            return ServerSide(value: nil, base: nil)
        }
    }

    func serverSide(of error: NetworkError, for record: OutboxRecord) -> ServerSide? {
        guard let body = error.body, !body.isEmpty, let item = try? JSONDecoder().decode(Item.self, from: body),
            let id = id(of: record), item.id == id
        else { return nil }
        return ServerSide(value: try? Self.encoder.encode(item), base: base(of: item, headers: error.headers))
    }

    func settle(_ record: OutboxRecord, against server: ServerSide) -> ConflictStep {
        // The server's value unknown: no policy can weigh it, the app decides.
        if let unreadable = server.unreadable { return .hold(unreadable) }
        // Deleted on the server: an update cannot bring it back (a create would), so keeping it is the app's call.
        if server.value == nil, !record.isDeletion, policy.isKeepMine {
            return .hold(
                .invalidRequest("the server deleted the item: an update cannot keep it; resolve with keepServer"))
        }
        switch policy.rule {
        case .hold: return .hold(nil)
        case .keepServer: return .keepServer
        case .keepMine: return .keepMine
        case .merge(let merge):
            guard !record.isDeletion else {
                return .hold(.invalidRequest("a deletion cannot be merged: resolve it with keepServer or keepMine"))
            }
            guard let data = record.value, let mine = try? JSONDecoder().decode(Item.self, from: data) else {
                return .hold(.invalidRequest("the change has no value to merge (an update made without optimistic:)"))
            }
            guard let data = server.value, let theirs = try? JSONDecoder().decode(Item.self, from: data) else {
                return .hold(.invalidRequest("the server deleted the item: there is nothing to merge with"))
            }
            // Checked before the merge runs: a type that makes no request of a value cannot send what it returns.
            guard (try? updateOfValue?(mine)) != nil else {
                return .hold(
                    .invalidRequest(
                        "\(name) makes no update request of a value: implement Updatable.updateRequest(from:) to merge")
                )
            }
            let base = record.base?.value.flatMap { try? JSONDecoder().decode(Item.self, from: $0) }
            let merged: Item
            do {
                merged = try merge(base, mine, theirs)
            } catch let error as NetworkError {
                return .hold(error)
            } catch {
                return .hold(.invalidRequest("the merge threw: \(error)"))
            }
            return .use(merged)
        }
    }

    func rewrite(_ record: OutboxRecord, with value: any Sendable, in session: NetworkSession) throws(NetworkError)
        -> OutboxRecord
    {
        guard !record.isCreation else { throw .invalidRequest("a create is not in conflict with anything") }
        guard let item = value as? Item else {
            throw .invalidRequest("the value to send is a \(type(of: value)); the change is of \(Item.self)")
        }
        guard let id = id(of: record), AnyHashable(item.id) == AnyHashable(id) else {
            throw .invalidRequest(
                "the value to send is item \(item.id); the change is of item \(record.itemDescription)")
        }
        guard let updateOfValue, let endpoint = try updateOfValue(item) else {
            throw .invalidRequest(
                "\(name) makes no update request of a value: implement Updatable.updateRequest(from:) to send one")
        }
        let body = try endpoint.body.map { body throws(NetworkError) in try session.encodeBody(body) }
        guard let data = try? Self.encoder.encode(item) else {
            throw .invalidRequest("the value to send does not encode")
        }
        var record = record
        record.kind = PendingChange.Kind.update.name
        record.value = data
        record.method = endpoint.method.rawValue
        record.path = endpoint.path
        record.query = endpoint.queryItems.map { .init(name: $0.name, value: $0.value) }
        record.headers = endpoint.headers.map { .init(name: $0.name, value: $0.value) }
        record.body = body?.body
        record.contentType = body?.contentType
        return record
    }

    func answer(of server: ServerSide) -> any Sendable {
        server.value.flatMap { try? JSONDecoder().decode(Item.self, from: $0) }
    }

    func land(
        _ record: OutboxRecord, answer: any Sendable, validators: Validators?, placeholder: ChangeMark?,
        in store: ResourceStore
    ) {
        guard let answer = answer as? Item? else { return }
        if record.isCreation {
            // Placed in each list as a create in the store is (`placement(ofCreated:in:)`), or where the list
            // showed its placeholder.
            if let item = answer { apply(store, .created(item), placeholder, validators) }
            return
        }
        guard let id = id(of: record) else { return }
        apply(store, answer.map { .updated($0) } ?? .deleted(id), nil, validators)
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
