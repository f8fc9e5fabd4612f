public import Foundation
public import ResourceKit
import Synchronization

/// How a ``SealedEntryStorage`` turns a value into what is stored and back: the hook for encrypting a store's
/// entries (with CryptoKit's `AES.GCM` or `ChaChaPoly` on Apple platforms, or any cipher of your own).
///
/// ```swift
/// let codec = EntryCodec(
///     seal: { try AES.GCM.seal($0, using: key).combined! },
///     open: { try AES.GCM.open(AES.GCM.SealedBox(combined: $0), using: key) })
/// let storage = SealedEntryStorage(try FileEntryStorage(directory: directory), codec: codec)
/// ```
public struct EntryCodec: Sendable {
    let seal: @Sendable (Data) throws -> Data
    let open: @Sendable (Data) throws -> Data

    /// Creates a codec.
    /// - Parameters:
    ///   - seal: Turns a value into the bytes to store (encrypts it); throwing fails the write.
    ///   - open: Turns stored bytes back into the value (decrypts and authenticates them); throwing drops the
    ///     entry, as a damaged file is dropped (another key, another cipher, tampered bytes).
    public init(
        seal: @escaping @Sendable (Data) throws -> Data, open: @escaping @Sendable (Data) throws -> Data
    ) {
        self.seal = seal
        self.open = open
    }
}

/// An ``EntryStorage`` that keeps its values sealed by an ``EntryCodec`` in another storage: what a store's
/// ``StorePersistence`` (its entries, its outbox or both) uses to keep them encrypted at rest.
///
/// Only each entry's value is sealed (the item's encoded value, or an outbox change with its body). Its key
/// (the type's name and the item's id), validators, date and schema are stored as they are.
public final class SealedEntryStorage: EntryStorage {
    /// Where the sealed entries live.
    public let base: any EntryStorage
    private let codec: EntryCodec
    private let dropped = Atomic<Int>(0)

    /// Creates a sealed storage over `base`.
    /// - Parameters:
    ///   - base: Where the sealed entries live: a ``FileEntryStorage``, or your own database.
    ///   - codec: How values are sealed and opened.
    public init(_ base: any EntryStorage, codec: EntryCodec) {
        self.base = base
        self.codec = codec
    }

    /// How many entries failed to open and were dropped since this storage was made.
    public var droppedCount: Int { dropped.load(ordering: .relaxed) }

    /// The entry, opened; `nil` when there is none, or when it does not open (it is then removed).
    /// - Parameter key: The entry's key.
    /// - Returns: The entry.
    /// - Throws: What the base storage throws.
    public func entry(for key: String) throws(NetworkError) -> PersistedEntry? {
        guard var entry = try base.entry(for: key) else { return nil }
        do {
            entry.value = try codec.open(entry.value)
            return entry
        } catch {
            dropped.add(1, ordering: .relaxed)
            try? base.removeEntries(for: [key])
            return nil
        }
    }

    /// Seals and stores entries.
    /// - Parameter entries: The entries.
    /// - Throws: `NetworkError.file(_:)` when one could not be sealed (nothing is stored then), or what the
    ///   base storage throws.
    public func store(_ entries: [PersistedEntry]) throws(NetworkError) {
        try base.store(try sealed(entries))
    }

    /// Seals and stores entries and removes others, in one batch where the base storage writes one.
    /// - Parameters:
    ///   - entries: The entries to store.
    ///   - keys: The keys whose entries to remove.
    /// - Throws: `NetworkError.file(_:)` when one could not be sealed (nothing is stored or removed then), or
    ///   what the base storage throws.
    public func store(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError) {
        try base.store(try sealed(entries), removing: keys)
    }

    private func sealed(_ entries: [PersistedEntry]) throws(NetworkError) -> [PersistedEntry] {
        var sealed = entries
        for index in sealed.indices {
            do {
                sealed[index].value = try codec.seal(sealed[index].value)
            } catch {
                throw .file("could not seal the entry \(sealed[index].key): \(error)")
            }
        }
        return sealed
    }

    /// Removes entries.
    /// - Parameter keys: The keys.
    /// - Throws: What the base storage throws.
    public func removeEntries(for keys: [String]) throws(NetworkError) { try base.removeEntries(for: keys) }

    /// Removes every entry.
    /// - Throws: What the base storage throws.
    public func removeAll() throws(NetworkError) { try base.removeAll() }

    /// The keys of the stored entries.
    /// - Throws: What the base storage throws.
    public func allKeys() throws(NetworkError) -> [String] { try base.allKeys() }
}

extension SealedEntryStorage: EvictionControlling {
    /// Tells the base storage, when it can be told.
    func keepEveryEntry() { (base as? any EvictionControlling)?.keepEveryEntry() }
}
