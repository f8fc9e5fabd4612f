public import Foundation
public import ResourceKit

/// A kept change the server's item had moved past when it was replayed: someone else changed or deleted the
/// item after the value the change was made on. What ``Outbox/conflicts()`` reports and ``Outbox/held`` lists.
///
/// The change is never sent over the other one and never dropped unasked: the type's ``ConflictPolicy``
/// resolves it (``resolution``), or it is held (``resolution`` `nil`) until you call
/// ``Outbox/resolve(_:with:)``. Read the three values with the change's value type:
///
/// ```swift
/// for await conflict in outbox.conflicts() {
///     let base = conflict.base(as: Post.self)      // what the edit was made on
///     let mine = conflict.mine(as: Post.self)      // the edit (nil for a deletion)
///     let theirs = conflict.theirs(as: Post.self)  // the server's now (nil: it deleted the item)
/// }
/// ```
public struct OutboxConflict: Sendable, Identifiable, CustomStringConvertible {
    /// The change; its ``PendingChange/base`` names the version it was made on.
    public let change: PendingChange
    /// Whether the server no longer has the item (`false` also when its value could not be read: ``error``
    /// says why).
    public let isDeletedOnServer: Bool
    /// How the type's ``ConflictPolicy`` resolved it as it was found, or `nil` when it is held for
    /// ``Outbox/resolve(_:with:)``.
    public let resolution: ConflictResolution?
    /// Why the type's policy could not resolve it, when it is held although the policy is not ``ConflictPolicy/hold``
    /// (a merge that threw, that returned another item, or that needs a value the change does not have; or the
    /// server refused the resolved change's precondition again). Known in the launch that found it.
    public let error: NetworkError?
    /// When the conflict was found.
    public let detectedAt: Date

    let baseValue: Data?
    let mineValue: Data?
    let theirsValue: Data?

    /// The change's id: one conflict per held change.
    public var id: String { change.id }

    /// The value the change was made on: what the holder showed as the server's then. `nil` when it was not
    /// kept (a change of an item its holder had not read), or does not decode as `Value`.
    /// - Parameter type: The change's value type.
    /// - Returns: The value.
    public func base<Value: Decodable>(as type: Value.Type = Value.self) -> Value? { Self.decode(baseValue) }

    /// The change's value: what it shows and sends. `nil` for a deletion, an update made without an optimistic
    /// value, or a value that does not decode as `Value`.
    /// - Parameter type: The change's value type.
    /// - Returns: The value.
    public func mine<Value: Decodable>(as type: Value.Type = Value.self) -> Value? { Self.decode(mineValue) }

    /// The server's value now. `nil` when the server deleted the item (``isDeletedOnServer``), when it could not
    /// be read (``error``), or when the value does not decode as `Value`.
    /// - Parameter type: The change's value type.
    /// - Returns: The value.
    public func theirs<Value: Decodable>(as type: Value.Type = Value.self) -> Value? { Self.decode(theirsValue) }

    /// The change, and what became of it.
    public var description: String {
        let outcome = resolution.map { "resolved: \($0)" } ?? "held" + (error.map { " (\($0))" } ?? "")
        return
            "conflict on \(change) with \(isDeletedOnServer ? "the server's deletion" : "the server's change"), \(outcome)"
    }

    private static func decode<Value: Decodable>(_ data: Data?) -> Value? {
        data.flatMap { try? JSONDecoder().decode(Value.self, from: $0) }
    }
}

/// What a type's kept changes do when the server's item moved past the value they were made on: given to
/// ``OfflineQueueing/resources(_:conflicts:conditionalWhenOnline:)``. Every conflict is reported on ``Outbox/conflicts()``,
/// whatever the policy.
public struct ConflictPolicy<Value: Sendable>: Sendable {
    enum Rule: Sendable {
        case hold, keepServer, keepMine
        case merge(@Sendable (_ base: Value?, _ mine: Value, _ theirs: Value) throws -> Value)
    }

    let rule: Rule

    var isKeepMine: Bool {
        if case .keepMine = rule { true } else { false }
    }

    /// Holds the change, still shown in every holder over the server's value, until
    /// ``Outbox/resolve(_:with:)``; later changes of the item wait behind it. The default: an app that does
    /// nothing loses neither edit.
    public static var hold: ConflictPolicy { ConflictPolicy(rule: .hold) }

    /// Keeps the server's value: the change is rolled back in every holder, which shows the server's value.
    public static var keepServer: ConflictPolicy { ConflictPolicy(rule: .keepServer) }

    /// Keeps the change: it is sent again at once, made on the server's current version (its preconditions
    /// name that version, when the server's answer carried an `ETag` or `Last-Modified`), so it overwrites the
    /// other change knowingly. An update of an item the server deleted cannot keep it: that change is held, with
    /// ``OutboxConflict/error`` saying so.
    public static var keepMine: ConflictPolicy { ConflictPolicy(rule: .keepMine) }

    /// Sends what `merge` makes of the three values, made on the server's current version, and shows it in
    /// every holder. `merge` gets the value the change was made on (`nil` when it was not kept), the change's
    /// value and the server's; it runs for an update made with a value (`optimistic:`) whose item the server
    /// still has, of a type whose `Updatable.updateRequest(from:)` makes a request of a value. Any other
    /// conflict, a `merge` that throws, or one that returns an item with another id, is held, with the reason
    /// in ``OutboxConflict/error``.
    /// - Parameter merge: Makes the value to send of base, mine and theirs.
    /// - Returns: The policy.
    public static func merge(
        _ merge: @escaping @Sendable (_ base: Value?, _ mine: Value, _ theirs: Value) throws -> Value
    ) -> ConflictPolicy {
        ConflictPolicy(rule: .merge(merge))
    }
}

/// How a type's kept changes find out that the server's item moved past the value they were made on: given
/// to ``OfflineQueueing/resources(_:conflicts:detection:conditionalWhenOnline:)``.
public struct ConflictDetection: Sendable, Hashable {
    let name: String

    /// The replayed update or delete carries a precondition: `If-Match` with the `ETag` of the value it was
    /// made on, or without one, `If-Unmodified-Since` with its `Last-Modified`; a server that honours them
    /// answers `412 Precondition Failed` instead of applying it, and no other write can slip in between. A
    /// change made on a value without either validator (or with a weak `ETag` only, which `If-Match` never
    /// matches) is sent without one. The default.
    public static let preconditions = ConflictDetection(name: "preconditions")

    /// For a server that ignores preconditions (PocketBase is one): before each replayed update or delete, the
    /// item is read, and its version (`RemoteResource.version(of:)`) compared with the version the change was
    /// made on; a different version, or an item gone, is a conflict (a deletion of an item that is gone has
    /// landed). A read that fails refuses the change, as a refused write would (an unreachable or busy server
    /// stops the replay for later). The type must be read by its value's id. The preconditions are sent as
    /// well. A write by someone else that reaches the server between that read's answer and the replayed write
    /// is overwritten: the window is one round trip. A change made on a value without a version is sent after
    /// the read unless the item is gone. Costs one read per replayed update or delete.
    public static let versionCheck = ConflictDetection(name: "versionCheck")
}

/// How a held conflict ends: what ``Outbox/resolve(_:with:)`` takes, and what ``OutboxConflict/resolution``
/// says a policy did.
public struct ConflictResolution: Sendable, CustomStringConvertible {
    let name: String
    let value: (any Sendable)?

    /// The server's value stays: the change is rolled back in every holder.
    public static let keepServer = ConflictResolution(name: "keepServer", value: nil)
    /// The change is sent again, made on the server's current version.
    public static let keepMine = ConflictResolution(name: "keepMine", value: nil)

    /// `value` is sent instead of the change, made on the server's current version, and shown in every holder
    /// meanwhile: a merge of your own. It must be the change's value type, with the change's item id, and its
    /// type must make an update request of a value (`Updatable.updateRequest(from:)`). A held deletion resolved
    /// so becomes an update that sends `value`.
    /// - Parameter value: The value to send.
    /// - Returns: The resolution.
    public static func use<Value: Sendable>(_ value: Value) -> ConflictResolution {
        ConflictResolution(name: "use", value: value)
    }

    /// `keepServer`, `keepMine`, or `use(value)`.
    public var description: String { value.map { "use(\($0))" } ?? name }
}
