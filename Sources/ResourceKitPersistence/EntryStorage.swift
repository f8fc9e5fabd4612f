public import Foundation
public import ResourceKit

/// One persisted store entry: a value and what its freshness and conditional reads need after a restart.
public struct PersistedEntry: Sendable, Equatable {
    /// What names the entry in its storage (a store makes it from the item's type and id).
    public var key: String
    /// The encoded value.
    public var value: Data
    /// The `ETag` of the answer that loaded the value, for a conditional read after a restart.
    public var entityTag: String?
    /// The `Last-Modified` of that answer.
    public var lastModified: String?
    /// When the value was loaded, on the wall clock, so that its age survives a restart.
    public var loadedAt: Date
    /// The version of the value's encoding: an entry of another version is dropped, not decoded.
    public var schema: Int
    /// Whether ``entityTag`` and ``lastModified`` are those of ``value`` itself (`true`, the default): a read
    /// after a restart sends them, and a `304 Not Modified` keeps the value. `false` when they are those of an
    /// earlier version of the item, the last the store knew (the value came without validators, from a list or a
    /// push): a change made on the value is still conditional on them — the worst that does is meet a conflict,
    /// never overwrite — but no read sends them. A storage keeps it with the entry.
    public var validatorsDescribeValue = true

    /// Creates an entry.
    /// - Parameters:
    ///   - key: What names the entry.
    ///   - value: The encoded value.
    ///   - entityTag: The `ETag` the value was loaded with.
    ///   - lastModified: The `Last-Modified` it was loaded with.
    ///   - loadedAt: When it was loaded.
    ///   - schema: The version of its encoding.
    public init(
        key: String, value: Data, entityTag: String? = nil, lastModified: String? = nil, loadedAt: Date,
        schema: Int = 1
    ) {
        self.key = key
        self.value = value
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.loadedAt = loadedAt
        self.schema = schema
    }
}

/// A storage that can be told to keep every entry, whatever its bound: what an outbox asks of its storage.
protocol EvictionControlling: Sendable {
    /// From now on, never evicts an entry to make room.
    func keepEveryEntry()
}

/// Where a store's entries live between runs: the seam for SQLite, GRDB or an app's own database.
/// ``FileEntryStorage`` is the one that ships.
///
/// Each call is synchronous and may block on I/O. A store writes from a thread of its own; it reads an entry
/// when it makes a resource that nothing in memory can start (outside its own lock), on the caller's thread. An
/// implementation must keep each entry whole: after a crash at any point, ``entry(for:)`` returns the old
/// entry, the new one, or none (for a key never stored), never a mix.
public protocol EntryStorage: Sendable {
    /// The entry stored for `key`, or `nil`: none, or one that failed its checks (dropped).
    /// - Parameter key: The entry's key.
    /// - Returns: The entry.
    /// - Throws: `NetworkError.file(_:)` when the storage cannot be read at all.
    func entry(for key: String) throws(NetworkError) -> PersistedEntry?
    /// Stores entries, each replacing the one of its key; when it returns, they survive a crash.
    /// - Parameter entries: The entries.
    /// - Throws: `NetworkError.file(_:)` when they could not be stored; each is then old or new.
    func store(_ entries: [PersistedEntry]) throws(NetworkError)
    /// Removes the entries of `keys`; keys with none are ignored.
    /// - Parameter keys: The keys.
    /// - Throws: `NetworkError.file(_:)`.
    func removeEntries(for keys: [String]) throws(NetworkError)
    /// Removes every entry: a logout's wipe.
    /// - Throws: `NetworkError.file(_:)`.
    func removeAll() throws(NetworkError)
    /// The keys of the stored entries, in no particular order.
    /// - Throws: `NetworkError.file(_:)`.
    func allKeys() throws(NetworkError) -> [String]
    /// Stores entries and removes the entries of `keys` in one batch: what a store's writer writes at once.
    /// The default stores, then removes (two batches); ``FileEntryStorage`` writes one.
    /// - Parameters:
    ///   - entries: The entries to store.
    ///   - keys: The keys whose entries to remove; keys with none are ignored.
    /// - Throws: `NetworkError.file(_:)`.
    func store(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError)
}

extension EntryStorage {
    /// Stores, then removes: two batches.
    /// - Parameters:
    ///   - entries: The entries to store.
    ///   - keys: The keys whose entries to remove.
    /// - Throws: `NetworkError.file(_:)`.
    public func store(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError) {
        try store(entries)
        try removeEntries(for: keys)
    }
}
