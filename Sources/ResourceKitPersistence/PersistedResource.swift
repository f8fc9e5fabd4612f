public import ResourceKit

/// How a remote type's values are kept between runs by a store with ``StorePersistence``: the name its entries
/// and its kept changes are stored under, the version of their encoding, and how many of a list's items are
/// kept.
///
/// A type needs nothing to be persisted: a store keeps every `Codable` value it shows, under the type's
/// module-qualified name, at schema 1, and the first 200 items of a list. Adopt this protocol to say otherwise,
/// with one line, where the type is declared or in an extension; its declarations are the requirements':
///
/// ```swift
/// extension RemoteNote: PersistedResource {
///     static let persistenceName = "notes"  // kept when the type is renamed, so its entries still restore
///     static let persistenceSchema = 2  // the value's `Codable` shape changed: older entries are dropped
/// }
/// ```
///
/// The settings used to be requirements of `Readable` and `Listable`. A type that still declares them without
/// adopting this protocol compiles, but the store no longer reads them: its entries and kept changes go under
/// the default name. An outbox that keeps changes under a name no type given to the store claims says so when
/// the store is made, in the session's log (a `DiagnosticEvent` of kind `unclaimedChanges`, at
/// `LogLevel.error`); they stay
/// on disk, listed in ``Outbox/pending``, and are sent once a run gives their type its name again.
public protocol PersistedResource: RemoteResource {
    /// The version of the value's encoding in a persistent store: raise it when the value's `Codable` shape
    /// changes, and entries written with another version are dropped and read again. 1 by default. (An entry
    /// that no longer decodes is dropped too.)
    static var persistenceSchema: Int { get }
    /// What names this type's entries and kept changes in a persistent store: its module-qualified name by
    /// default. Give a private or local type a name of its own (the runtime cannot name those the same way in
    /// every run), and keep it when you rename the type, so that its entries and kept changes still restore.
    static var persistenceName: String { get }
    /// How many of a list's items a persistent store keeps (its first ones), so that the list shows them at the
    /// next launch; 200 by default, 0 keeps none. Read for a `Listable` type.
    static var persistedItemLimit: Int { get }
}

extension PersistedResource {
    /// One.
    public static var persistenceSchema: Int { 1 }
    /// The type's module-qualified name, such as `MyApp.RemotePost`.
    public static var persistenceName: String { String(reflecting: Self.self) }
    /// 200.
    public static var persistedItemLimit: Int { 200 }
}

/// A remote type's persistence settings: its ``PersistedResource`` declarations, or the defaults.
enum PersistenceSettings {
    static func name(of type: Any.Type) -> String {
        (type as? any PersistedResource.Type)?.persistenceName ?? String(reflecting: type)
    }

    static func schema(of type: Any.Type) -> Int { (type as? any PersistedResource.Type)?.persistenceSchema ?? 1 }

    static func itemLimit(of type: Any.Type) -> Int { (type as? any PersistedResource.Type)?.persistedItemLimit ?? 200 }
}

extension DiagnosticEvent.Kind {
    /// An outbox keeps changes under a type name that no type given to its store claims (see
    /// ``PersistedResource``): the event's `itemType` is the name, its `itemCount` how many changes, its `error`
    /// says what to do. Logged at `LogLevel.error` when the store is made.
    public static let unclaimedChanges = DiagnosticEvent.Kind("unclaimedChanges", level: .error)
}
