public import Foundation
public import ResourceKit

/// A change kept in a store's ``Outbox`` until the server takes it: what ``Outbox/pending`` lists.
public struct PendingChange: Sendable, Identifiable, Hashable, CustomStringConvertible {
    /// What a pending change does to its item.
    ///
    /// A struct with static members, so that a later release can add kinds without breaking a `switch` in
    /// your code.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's name: `update`, `delete` or `create`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// An update of the item.
        public static let update = Kind("update")
        /// A deletion of the item.
        public static let delete = Kind("delete")
        /// A creation of an item (through a list): it names no item until the server makes one.
        public static let create = Kind("create")
        /// The kind's name.
        public var description: String { name }
    }

    /// The change's id, sent as its `Idempotency-Key` header on every attempt, across restarts (a change resolved
    /// after a conflict is a new request, sent with a new key; its id stays).
    public let id: String
    /// Its place in the outbox: changes are sent in this order.
    public let sequence: UInt64
    /// What it does.
    public let kind: Kind
    /// The ``PersistedResource/persistenceName`` of its `Remote` type; for a change made through a list (kept
    /// with `.list(RemoteFeed.self)`), `list:` and the list type's name, as in `list:MyApp.RemoteFeed`.
    public let typeName: String
    /// Its item's id, as text; empty for a create.
    public let itemID: String
    /// When it was kept, on the wall clock.
    public let queuedAt: Date
    /// The method it sends.
    public let method: HTTPMethod
    /// The path it sends to.
    public let path: String
    /// What the server had of the item when the change was made (the value the holder showed as the server's),
    /// kept with the change across restarts: its validators and version. `nil` when nothing was known of it (a
    /// create, or an item the holder had not loaded), and when the value it was made on had neither validators
    /// nor a version (a server that sends none): the change then carries no precondition, though a conflict's
    /// ``OutboxConflict/base(as:)`` still gives that value.
    public let base: Base?
    /// Whether the change is held in a conflict with a change of the server's (``Outbox/held``): it is not sent
    /// until ``Outbox/resolve(_:with:)``, and later changes of its item wait behind it.
    public let isHeld: Bool

    /// What the server had of a changed item: the validators its last answer carried and its version
    /// (`RemoteResource.version(of:)`). A change through a list knows the version only: a list keeps no
    /// validators per item.
    public struct Base: Sendable, Hashable {
        /// The `ETag` of the value the change was made on.
        public let entityTag: String?
        /// Its `Last-Modified`.
        public let lastModified: String?
        /// Its version.
        public let version: ItemVersion?
    }

    /// The change, as in `update MyApp.RemotePost/42 (PATCH posts/42)`, and `held` when it is.
    public var description: String { "\(kind) \(typeName)/\(itemID) (\(method) \(path))" + (isHeld ? " held" : "") }
}

/// A pending change that will not reach the server: refused on replay, or rolled back with the refused
/// change of the same item it came after. Every holder of the item shows it without the change again.
public struct OutboxFailure: Sendable, CustomStringConvertible {
    /// The change.
    public let change: PendingChange
    /// Why: the server's error for the refused change, the same error for the changes rolled back after it.
    public let error: NetworkError
    /// For a change rolled back because an earlier change of its item was refused, that change's id; `nil` for
    /// the refused change itself.
    public let after: String?

    /// The change and its error.
    public var description: String {
        after.map { "\(change) rolled back after \($0) was refused: \(error)" } ?? "\(change) refused: \(error)"
    }
}

/// What the outbox keeps of one change, as it is stored: enough to send it again after a restart and to show
/// it in every holder meanwhile.
struct OutboxRecord: Codable, Sendable {
    var sequence: UInt64
    var id: String
    var type: String
    var kind: String
    /// The item's id, JSON-encoded.
    var item: Data
    var itemDescription: String
    /// The value shown until the change lands (an update's optimistic value, JSON-encoded); `nil` shows
    /// nothing (a deletion, or an update made without one).
    var value: Data?
    var queuedAt: Date
    var method: String
    var path: String
    var query: [Query]
    var headers: [Header]
    var body: Data?
    var contentType: String?
    /// What the server had of the item when the change was made; absent from records kept before bases were.
    var base: Base?
    /// The conflict the change is held in, if it is.
    var conflict: Conflict?
    /// The `Idempotency-Key` it is sent with when it is not its id: a change resolved after a conflict is a new
    /// request (a server that keeps answers by key would answer it with the `412` again).
    var key: String?

    /// A conflict as stored: the server's side of it.
    struct Conflict: Codable, Sendable {
        /// The server's value, JSON-encoded; `nil` when it has no such item.
        var theirs: Data?
        /// The server's validators and version.
        var current: Base?
        var detectedAt: Date
        /// Whether the server's value could not be read (`theirs` is then `nil` without the item being gone).
        var isUnknown: Bool?
    }

    /// A change's base as stored: a version is a number or a text.
    struct Base: Codable, Sendable {
        var entityTag: String?
        var lastModified: String?
        var versionNumber: Int64?
        var versionText: String?
        /// The value itself, JSON-encoded: what a merge starts from.
        var value: Data?

        init(_ base: MutationBase, value: Data?) {
            self.init(
                entityTag: base.validators?.entityTag, lastModified: base.validators?.lastModified,
                version: base.version,
                value: value)
        }

        init(entityTag: String?, lastModified: String?, version: ItemVersion?, value: Data?) {
            self.entityTag = entityTag
            self.lastModified = lastModified
            versionNumber = version?.number
            versionText = version?.text
            self.value = value
        }

        var version: ItemVersion? { versionNumber.map { ItemVersion($0) } ?? versionText.map { ItemVersion($0) } }

        /// The `ETag` and `Last-Modified`, or `nil` when there are none.
        var validators: Validators? { Validators(entityTag: entityTag, lastModified: lastModified) }

        /// The validators and version, or `nil` when there are none.
        var change: PendingChange.Base? {
            guard entityTag != nil || lastModified != nil || version != nil else { return nil }
            return PendingChange.Base(entityTag: entityTag, lastModified: lastModified, version: version)
        }
    }

    struct Query: Codable, Sendable {
        var name: String
        var value: String?
    }

    struct Header: Codable, Sendable {
        var name: String
        var value: String
    }

    var isDeletion: Bool { kind == PendingChange.Kind.delete.name }
    var isCreation: Bool { kind == PendingChange.Kind.create.name }

    var change: PendingChange {
        PendingChange(
            id: id, sequence: sequence, kind: isDeletion ? .delete : isCreation ? .create : .update, typeName: type,
            itemID: itemDescription, queuedAt: queuedAt, method: HTTPMethod(rawValue: method), path: path,
            base: base?.change, isHeld: conflict != nil)
    }

    /// The request to send on replay: ``endpoint`` with the preconditions of its base.
    var conditionalEndpoint: Endpoint { isCreation ? endpoint : Self.conditional(endpoint, on: base) }

    /// `endpoint` with the preconditions of a base (an update's or a deletion's): `If-Match` with a strong `ETag`
    /// (a weak one never matches), or else `If-Unmodified-Since`, unless the request names its own.
    static func conditional(_ endpoint: Endpoint, on base: Base?) -> Endpoint {
        guard let base, endpoint.headers["If-Match"] == nil, endpoint.headers["If-Unmodified-Since"] == nil else {
            return endpoint
        }
        var endpoint = endpoint
        if let tag = base.entityTag, !tag.hasPrefix("W/") {
            endpoint.headers["If-Match"] = tag
        } else if let date = base.lastModified {
            endpoint.headers["If-Unmodified-Since"] = date
        }
        return endpoint
    }

    /// The request to send, with its `Idempotency-Key`.
    var endpoint: Endpoint {
        var headers = HTTPHeaders()
        for header in self.headers { headers[header.name] = header.value }
        headers["Idempotency-Key"] = key ?? id
        var endpoint = Endpoint(
            HTTPMethod(rawValue: method), "", queryItems: query.map { URLQueryItem(name: $0.name, value: $0.value) },
            headers: headers, body: body.map { .data($0, contentType: contentType ?? "application/octet-stream") })
        // As it was stored: already made into a path once, not encoded a second time.
        endpoint.path = path
        return endpoint
    }

    /// The key of the record in the outbox's storage: its sequence, zero-padded, so that keys sort in order.
    var storageKey: String { Self.storageKey(sequence) }

    static func storageKey(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return "change-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}

extension NetworkError.Code {
    /// A change that shows nothing was kept in the store's ``Outbox`` while the server was unreachable, to be
    /// sent later: `NetworkError.queuedChange` names it. (A kept change that shows something returns.)
    public static let queued = NetworkError.Code("queued")
}

extension NetworkError {
    /// Thrown when the store's ``Outbox`` kept a change that shows nothing while the server was unreachable
    /// (`Resource.update(_:)` or `ListResource.create(_:)` without an optimistic value): there is no value to
    /// return. ``Outbox/replay()`` sends it later. A change kept with an optimistic value, and a delete,
    /// return normally instead.
    /// - Parameter change: The ``PendingChange/id`` of the kept change (its `Idempotency-Key`).
    public static func queued(_ change: String) -> NetworkError { NetworkError(.queued, detail: change) }

    /// The ``PendingChange/id`` of the change a `Code.queued` error kept in the outbox.
    public var queuedChange: String? { code == .queued ? message : nil }
}
