public import Foundation
public import ResourceKit
import Synchronization

/// Entries in files: one directory per store (make one per signed-in user to keep their data apart), one log
/// file per batch, each write atomic and checked.
///
/// - **Atomic:** a batch (one ``store(_:)`` or ``removeEntries(for:)``) is written to a temporary file in the
///   directory, `fsync`ed, renamed into place as a log file, and the directory is `fsync`ed: after a crash at
///   any point, the whole batch is there or none of it, and each entry is old or new, never torn. A batch of a
///   thousand entries costs one file and two `fsync`s, not a thousand files.
/// - **Log files:** the newest record of a key wins; a removal is a record too. Small log files are merged with
///   the next batch as it is written (a file is rewritten when the batches after it add up to half its size),
///   and all of them are rewritten into one when replaced and removed records take more bytes than the
///   entries and more than 64 KB, so a directory holds a few files of at most twice its entries' bytes, or
///   its entries' bytes plus 64 KB when that is more, besides the batch being written.
/// - **Checked:** each record carries a checksum of its key and header and one of its value (FNV-1a 64). A
///   record that fails a check is dropped, counted in ``droppedCount`` and never returned: its entry is gone
///   (read again from the network), not replaced by an older record of its key. Only when a record's header
///   is damaged too, so that nothing says which key it held, can its key's older record, if one is still
///   kept, be what remains. Opening reads every record once (a few milliseconds for ten thousand entries)
///   and rewrites the files when it found damage, so the damage is gone from the next launch.
/// - **Bounded:** past ``maximumBytes`` of entries, the least recently used ones (by last read or write; after
///   a reopening, by last write) are removed, in the same batch as the write that went past it; a batch larger
///   than the bound then loses its own entries in order, first to last, until the rest fit (its last entry is
///   always kept, even alone past the bound). A storage given to a store as its outbox never evicts, whatever
///   its bound: an evicted change would be a lost edit.
/// - **Shared directories:** several storages may open one directory (an app and its extension, or a test
///   reading what a store wrote). Their writes take turns under an advisory lock (`flock` on the directory's
///   `.lock` file), and a storage reads the files again on its next call once another wrote, which costs a
///   read of the whole directory: sharing suits a reader beside a writer, not two busy writers. A wipe
///   leaves the directory empty.
public final class FileEntryStorage: EntryStorage {
    /// The directory of the log files.
    public let directory: URL
    /// The most bytes the stored entries may take (their records, as ``totalBytes`` counts them); at least
    /// one entry is always kept.
    public let maximumBytes: Int
    /// Whether writes past ``maximumBytes`` evict: until an outbox takes the storage.
    let evicts = Atomic(true)
    /// The directory's path with a trailing `/`.
    let prefix: String

    struct Location {
        let file: EntryLogFile
        let offset: Int
        let length: Int
        var used: UInt64

        func isAt(_ other: Location?) -> Bool { other.map { $0.file === file && $0.offset == offset } ?? false }
    }

    struct Index {
        /// The log files, oldest batch first.
        var files: [EntryLogFile] = []
        /// Where the newest record of each stored key is.
        var entries: [String: Location] = [:]
        /// Keys whose newest record is a removal (or was damaged), by the file that holds it: a merge that does
        /// not reach the oldest file keeps the removal, since an older file may hold the key.
        var removals: [String: UInt64] = [:]
        var totalBytes = 0
        var clock: UInt64 = 0
        var dropped = 0
        var nextBatch: UInt64 = 1
        /// The lock file's token when the index was last in step with the files.
        var token = EntryDirectoryLock.Token.absent

        var fileBytes: Int { files.reduce(0) { $0 + $1.size } }

        mutating func forget(_ key: String) {
            guard let old = entries.removeValue(forKey: key) else { return }
            totalBytes -= old.length
        }

        mutating func place(_ key: String, in file: EntryLogFile, at offset: Int, length: Int) {
            forget(key)
            clock += 1
            entries[key] = Location(file: file, offset: offset, length: length, used: clock)
            totalBytes += length
            removals[key] = nil
        }

        mutating func remove(_ key: String, in file: EntryLogFile) {
            forget(key)
            removals[key] = file.first
        }
    }

    let index = Locked(Index())
    /// Held by each write and each reading of the files, so that they happen one at a time in this storage.
    let writing = NSLock()
    /// Orders the writes of every storage open on the directory, and tells each that another wrote.
    let lock: EntryDirectoryLock

    /// Opens (creating if needed) the storage in `directory`.
    /// - Parameters:
    ///   - directory: The directory; one per store and user.
    ///   - maximumBytes: The most bytes of entries to keep, least recently used first out.
    /// - Throws: `NetworkError.file(_:)` when the directory cannot be made or read.
    public init(directory: URL, maximumBytes: Int = 50 << 20) throws(NetworkError) {
        self.directory = directory
        self.maximumBytes = max(1, maximumBytes)
        let path = directory.path
        prefix = path.hasSuffix("/") ? path : path + "/"
        lock = EntryDirectoryLock(directory: prefix)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .file("cannot make the directory \(directory.path): \(error.localizedDescription)")
        }
        var loaded = try load()
        guard !loaded.leftovers.isEmpty || loaded.damaged else {
            index.withLock { $0 = loaded.index }
            return
        }
        // What a crash left (a temporary file, files a merge or a wipe had not removed yet) and damaged records
        // are cleaned up holding the lock: no other storage is then writing.
        writing.lock()
        defer { writing.unlock() }
        try lock.exclusively { (handle, token) throws(NetworkError) in
            if token != loaded.index.token { loaded = try load() }
            for name in loaded.leftovers { unlink(prefix + name) }
            try syncDirectory(directory.path)
            index.withLock { $0 = loaded.index }
            if loaded.damaged { try commit([], mergingAll: true) }
            try publish(after: token, handle)
        }
    }

    /// Runs a write: holding the directory's lock, on an index that has read what other storages wrote, and
    /// bumping the lock file's counter after it.
    private func write(_ body: () throws(NetworkError) -> Void) throws(NetworkError) {
        writing.lock()
        defer { writing.unlock() }
        try reopenIfRemoved()
        try lock.exclusively { (handle, token) throws(NetworkError) in
            // Another storage may also have died after putting a file in place and before telling: its files
            // are read (and what it left removed) before this write numbers its own.
            if token != index.withLock({ $0.token }) || !knowsEveryFile() { try reload(cleaning: true) }
            try body()
            try publish(after: token, handle)
        }
    }

    /// Whether the directory holds exactly the log files the index knows, and no temporary file.
    private func knowsEveryFile() -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return false }
        let known = Set(index.withLock { $0.files.map(\.name) })
        var logs = 0
        for name in names {
            if name.hasPrefix(".tmp-") { return false }
            guard EntryLogFile.range(ofName: name) != nil else { continue }
            guard known.contains(name) else { return false }
            logs += 1
        }
        return logs == known.count
    }

    /// For tests of the package: writes a wipe's record and stops there, as a storage killed in the middle of
    /// ``removeAll()`` would (the files before it stay, and no other storage is told).
    func wipeAndDieBeforeRemovingFiles() throws(NetworkError) {
        writing.lock()
        defer { writing.unlock() }
        try lock.exclusively { (_, _) throws(NetworkError) in
            let batch = index.withLock { index in
                defer { index.nextBatch += 1 }
                return index.nextBatch
            }
            let writer = try EntryLogWriter(directory: prefix)
            writer.append(EntryCoding.record(.wipe, key: "") ?? [])
            close(try writer.finish(as: EntryLogFile.name(first: batch, last: batch), in: prefix))
            try syncDirectory(directory.path)
        }
    }

    private func publish(after token: EntryDirectoryLock.Token, _ handle: EntryDirectoryLock.Handle)
        throws(NetworkError)
    {
        var next = token
        next.counter = token.counter + 1
        try handle.publish(next.counter)
        index.withLock { $0.token = next }
    }

    /// How many damaged records this storage dropped since it was opened (a run of records whose headers are
    /// damaged counts once: nothing tells how many records it held).
    public var droppedCount: Int { index.withLock { $0.dropped } }

    /// The bytes the stored entries take: the size of their newest records, which ``maximumBytes`` bounds. The
    /// files take more until replaced and removed records are merged away: at most twice as much, or 64 KB more
    /// when that is more.
    public var totalBytes: Int { index.withLock { $0.totalBytes } }

    /// How many log files the directory holds: for tests of the package.
    var logFileCount: Int { index.withLock { $0.files.count } }

    /// The path, offset and length of the newest record of `key`: for tests of the package that damage it.
    func location(ofKey key: String) -> (path: String, offset: Int, length: Int)? {
        index.withLock { index in
            index.entries[key].map { (prefix + $0.file.name, $0.offset, $0.length) }
        }
    }

    /// The entry of `key`, or `nil`; a record that fails its checks is dropped and counted in ``droppedCount``.
    /// - Parameter key: The entry's key.
    /// - Returns: The entry.
    public func entry(for key: String) throws(NetworkError) -> PersistedEntry? {
        try refreshIfChanged()
        let location: Location? = index.withLock { index in
            guard index.entries[key] != nil else { return nil }
            index.clock += 1
            index.entries[key]?.used = index.clock
            return index.entries[key]
        }
        guard let location else { return nil }
        if let record = location.file.read(at: location.offset, count: location.length),
            let entry = record.withUnsafeBytes({ EntryCoding.entry(from: $0, key: key) })
        {
            return entry
        }
        index.withLock { index in
            guard location.isAt(index.entries[key]) else { return }
            index.remove(key, in: location.file)
            index.dropped += 1
        }
        return nil
    }

    /// Stores entries in one atomic batch, each replacing its key's; when it returns, they are on disk.
    /// - Parameter entries: The entries; of several with one key, the last counts.
    /// - Throws: `NetworkError.file(_:)`; the batch is then stored whole or not at all.
    public func store(_ entries: [PersistedEntry]) throws(NetworkError) {
        try storeBatch(entries, removing: [])
    }

    private func storeBatch(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError) {
        guard !entries.isEmpty || !keys.isEmpty else { return }
        // One record per key, the last given; in the order of those last ones, so that the newest is last.
        var last: [String: Int] = [:]
        for (position, entry) in entries.enumerated() { last[entry.key] = position }
        var batch: [(key: String, record: [UInt8])] = []
        for (position, entry) in entries.enumerated() where last[entry.key] == position {
            guard let record = EntryCoding.record(of: entry) else {
                throw .file("the entry of \(entry.key) is too large to store (4 GB or more)")
            }
            batch.append((entry.key, record))
        }
        try write { () throws(NetworkError) in
            let stored = Set(batch.map(\.key))
            let removed = index.withLock { index in
                Set(keys.filter { index.entries[$0] != nil && !stored.contains($0) })
            }
            let victims = index.withLock { index in
                evictions(in: index, adding: batch.map { ($0.key, $0.record.count) }, removing: removed)
            }
            var operations: [Operation] = removed.union(victims.subtracting(stored)).map { .remove($0) }
            for (key, record) in batch { operations.append(victims.contains(key) ? .remove(key) : .put(key, record)) }
            guard !operations.isEmpty else { return }
            try commit(operations)
        }
    }

    /// Stores entries and removes the entries of `keys` in one atomic batch.
    /// - Parameters:
    ///   - entries: The entries to store; of several with one key, the last counts.
    ///   - keys: The keys whose entries to remove; keys with none, or with an entry in `entries`, are ignored.
    /// - Throws: `NetworkError.file(_:)`; the batch is then stored whole or not at all.
    public func store(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError) {
        try storeBatch(entries, removing: keys)
    }

    /// Removes the entries of `keys` in one atomic batch; keys with none are ignored.
    /// - Parameter keys: The keys.
    /// - Throws: `NetworkError.file(_:)`.
    public func removeEntries(for keys: [String]) throws(NetworkError) {
        guard !keys.isEmpty else { return }
        try write { () throws(NetworkError) in
            let stored = index.withLock { index in keys.filter { index.entries[$0] != nil } }
            guard !stored.isEmpty else { return }
            try commit(stored.map { .remove($0) })
        }
    }

    /// Removes every entry and every file.
    /// - Throws: `NetworkError.file(_:)` when the directory cannot be synced.
    public func removeAll() throws(NetworkError) {
        writing.lock()
        defer { writing.unlock() }
        try reopenIfRemoved()
        try lock.exclusively { (handle, token) throws(NetworkError) in
            let batch = index.withLock { index in
                defer { index.nextBatch += 1 }
                return index.nextBatch
            }
            // Every log and temporary file, known or left by a crash of another storage.
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
                    $0.hasPrefix(".tmp-") || EntryLogFile.range(ofName: $0) != nil
                }
            } catch {
                throw .file("cannot read the directory \(directory.path): \(error.localizedDescription)")
            }
            let wipe = EntryLogFile.name(first: batch, last: batch)
            if names.contains(where: { !$0.hasPrefix(".tmp-") }) {
                // A wipe record first: a crash while the files are removed cannot bring back the ones left.
                let writer = try EntryLogWriter(directory: prefix)
                writer.append(EntryCoding.record(.wipe, key: "") ?? [])
                close(try writer.finish(as: wipe, in: prefix))
                try syncDirectory(directory.path)
                for name in names { unlink(prefix + name) }
                try syncDirectory(directory.path)
                unlink(prefix + wipe)
            } else {
                for name in names { unlink(prefix + name) }
            }
            // The lock file goes too, so that a wiped directory is empty; storages holding it open see it wiped.
            lock.retire(handle)
            try syncDirectory(directory.path)
            index.withLock { index in
                let dropped = index.dropped
                index = Index()
                index.dropped = dropped
                index.nextBatch = batch + 1
            }
        }
    }

    /// The keys of the stored entries.
    /// - Returns: The keys.
    /// - Throws: `NetworkError.file(_:)` when the files, changed by another storage, cannot be read again.
    public func allKeys() throws(NetworkError) -> [String] {
        try refreshIfChanged()
        return index.withLock { Array($0.entries.keys) }
    }
}

extension FileEntryStorage: EvictionControlling {
    /// From now on, never evicts: the storage is an outbox's.
    func keepEveryEntry() { evicts.store(false, ordering: .relaxed) }
}
