public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Entries in files: one directory per store (make one per signed-in user to keep their data apart), one
/// file per entry, each write atomic and checked.
///
/// - **Atomic:** an entry is written to a temporary file in the same directory, `fsync`ed, renamed over the
///   old one, and the directory is `fsync`ed: after a crash at any point, the entry is old or new, never
///   torn. A batch of several entries is synced with one `syncfs` of the directory's file system (on Linux)
///   instead of one `fsync` per file, before any is renamed. Temporary files a crash left behind are removed when the storage is opened.
/// - **Checked:** each file holds a magic number, its length and an FNV-1a 64-bit checksum of its contents.
///   A file that fails any check (truncated, corrupted, another format, another key) is removed and counted
///   in ``droppedCount``, never returned.
/// - **Bounded:** past ``maximumBytes`` on disk, the least recently used entries (by last read or write)
///   are removed.
/// - **One instance per directory:** two open on one directory (an app and its extension) would remove each
///   other's temporary files and bound only their own entries.
public final class FileEntryStorage: EntryStorage {
    /// The directory of the entries.
    public let directory: URL
    /// The most bytes the entries' files may take; at least one entry is always kept.
    public let maximumBytes: Int
    /// The directory's path with a trailing `/`: a file's path is this and its name (building a `URL` per file
    /// was a fifth of a cold start's time).
    private let prefix: String

    private struct Index {
        /// Size and last use of each entry file, by file name.
        var files: [String: (bytes: Int, used: UInt64)] = [:]
        var totalBytes = 0
        var clock: UInt64 = 0
        var dropped = 0
    }

    private let index = Locked(Index())

    /// Opens (creating if needed) the storage in `directory`.
    /// - Parameters:
    ///   - directory: The directory; one per store and user.
    ///   - maximumBytes: The most bytes of entry files to keep, least recently used first out.
    /// - Throws: ``NetworkError/file(_:)`` when the directory cannot be made or read.
    public init(directory: URL, maximumBytes: Int = 50 << 20) throws(NetworkError) {
        self.directory = directory
        self.maximumBytes = max(1, maximumBytes)
        let path = directory.path
        prefix = path.hasSuffix("/") ? path : path + "/"
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .file("cannot make the directory \(directory.path): \(error.localizedDescription)")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw .file("cannot read the directory \(directory.path): \(error.localizedDescription)")
        }
        // Oldest first, so that the order of use survives a restart (by modification time, which a read
        // does not change: reads since the last write are forgotten, which only makes eviction a little
        // less exact).
        var found: [(name: String, bytes: Int, modified: Double)] = []
        for name in names {
            let path = prefix + name
            if name.hasPrefix(".tmp-") {
                unlink(path)
                continue
            }
            guard name.hasSuffix(".entry") else { continue }
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            #if canImport(Darwin)
                let modified = info.st_mtimespec
            #else
                let modified = info.st_mtim
            #endif
            found.append((name, Int(info.st_size), Double(modified.tv_sec) + Double(modified.tv_nsec) / 1e9))
        }
        found.sort { $0.modified < $1.modified }
        index.withLock { index in
            for file in found {
                index.clock += 1
                index.files[file.name] = (file.bytes, index.clock)
                index.totalBytes += file.bytes
            }
        }
    }

    /// How many entries failed their checks and were dropped since the storage was opened.
    public var droppedCount: Int { index.withLock { $0.dropped } }

    /// The bytes the entry files take.
    public var totalBytes: Int { index.withLock { $0.totalBytes } }

    /// The entry of `key`, or `nil`; a file that fails its checks is removed and counted in ``droppedCount``.
    /// - Parameter key: The entry's key.
    /// - Returns: The entry.
    /// - Throws: ``NetworkError/file(_:)`` when the file exists but cannot be read.
    public func entry(for key: String) throws(NetworkError) -> PersistedEntry? {
        let name = Self.fileName(for: key)
        let path = path(of: name)
        guard let data = try Self.contents(of: path) else { return nil }
        guard let entry = EntryCoding.decode(data), entry.key == key else {
            unlink(path)
            index.withLock { index in
                index.dropped += 1
                if let old = index.files.removeValue(forKey: name) { index.totalBytes -= old.bytes }
            }
            return nil
        }
        index.withLock { index in
            index.clock += 1
            index.files[name]?.used = index.clock
        }
        return entry
    }

    /// Stores entries atomically, each replacing its key's; when it returns, they are on disk.
    /// - Parameter entries: The entries; of several with one key, the last counts.
    /// - Throws: ``NetworkError/file(_:)``; each entry is then old or new.
    public func store(_ entries: [PersistedEntry]) throws(NetworkError) {
        guard !entries.isEmpty else { return }
        var latest: [String: PersistedEntry] = [:]
        for entry in entries { latest[entry.key] = entry }
        var written: [(temporary: String, name: String, bytes: Int)] = []
        defer { for file in written { unlink(file.temporary) } }
        // A directory removed while the storage was open (a cache cleared by the system) is made again.
        if access(directory.path, F_OK) != 0 {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            index.withLock { $0 = Index() }
        }
        // A batch is synced once, with `syncfs`, where there is one (Linux): a thousand `fsync`s cost about a
        // thousand times one. Each file is still whole on disk before it is renamed into place.
        let syncsOnce = latest.count > 1 && Self.canSyncFileSystem
        for entry in latest.values {
            let data = EntryCoding.encode(entry)
            let temporary = path(of: ".tmp-\(UUID().uuidString)")
            try Self.writeFile(data, to: temporary, syncing: !syncsOnce)
            written.append((temporary, Self.fileName(for: entry.key), data.count))
        }
        if syncsOnce { try syncFileSystem() }
        for (position, file) in written.enumerated() {
            let path = path(of: file.name)
            guard rename(file.temporary, path) == 0 else {
                written.removeFirst(position)
                throw .file("cannot rename an entry into place: \(String(cString: strerror(errno)))")
            }
            index.withLock { index in
                index.clock += 1
                let old = index.files.updateValue((file.bytes, index.clock), forKey: file.name)
                index.totalBytes += file.bytes - (old?.bytes ?? 0)
            }
        }
        written = []
        try syncDirectory()
        try evict()
    }

    /// Removes the entries of `keys`.
    /// - Parameter keys: The keys.
    /// - Throws: ``NetworkError/file(_:)`` when the directory cannot be synced.
    public func removeEntries(for keys: [String]) throws(NetworkError) {
        guard !keys.isEmpty else { return }
        for key in keys { remove(Self.fileName(for: key)) }
        try syncDirectory()
    }

    /// Removes every entry.
    /// - Throws: ``NetworkError/file(_:)`` when the directory cannot be synced.
    public func removeAll() throws(NetworkError) {
        let names = index.withLock { Array($0.files.keys) }
        for name in names { remove(name) }
        try syncDirectory()
    }

    /// The keys of the stored entries; reading each file's key, dropping those that fail their checks.
    /// - Returns: The keys.
    /// - Throws: ``NetworkError/file(_:)``.
    public func allKeys() throws(NetworkError) -> [String] {
        let names = index.withLock { Array($0.files.keys) }
        var keys: [String] = []
        for name in names {
            let path = path(of: name)
            guard let data = try Self.contents(of: path) else { continue }
            if let entry = EntryCoding.decode(data), Self.fileName(for: entry.key) == name {
                keys.append(entry.key)
            } else {
                unlink(path)
                index.withLock { index in
                    index.dropped += 1
                    if let old = index.files.removeValue(forKey: name) { index.totalBytes -= old.bytes }
                }
            }
        }
        return keys
    }

    // MARK: Files

    private func path(of name: String) -> String { prefix + name }

    private func remove(_ name: String) {
        unlink(path(of: name))
        index.withLock { index in
            if let old = index.files.removeValue(forKey: name) { index.totalBytes -= old.bytes }
        }
    }

    /// Removes the least recently used entries while the total is over the bound, keeping the newest.
    private func evict() throws(NetworkError) {
        let victims: [String] = index.withLock { index in
            guard index.totalBytes > maximumBytes else { return [] }
            var victims: [String] = []
            var total = index.totalBytes
            for (name, file) in index.files.sorted(by: { $0.value.used < $1.value.used }).dropLast() {
                guard total > maximumBytes else { break }
                victims.append(name)
                total -= file.bytes
            }
            return victims
        }
        guard !victims.isEmpty else { return }
        for name in victims { remove(name) }
        try syncDirectory()
    }

    private func syncDirectory() throws(NetworkError) {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .file("cannot open \(directory.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw .file("cannot sync \(directory.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether this platform can sync a whole file system in one call.
    static var canSyncFileSystem: Bool { syncFS != nil }

    /// glibc's `syncfs`, looked up at run time: its declaration needs `_GNU_SOURCE`, which Swift's import of
    /// the C library does not set.
    private static let syncFS: (@convention(c) (Int32) -> Int32)? = {
        #if os(Linux)
            guard let symbol = dlsym(nil, "syncfs") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
        #else
            return nil
        #endif
    }()

    /// Syncs the file system of the directory: every file written before is on disk when it returns.
    private func syncFileSystem() throws(NetworkError) {
        guard let syncFS = Self.syncFS else { return }
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .file("cannot open \(directory.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        guard syncFS(descriptor) == 0 else {
            throw .file("cannot sync the file system of \(directory.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Writes `data` to a new file at `path`, and syncs it when `syncing`.
    private static func writeFile(_ data: Data, to path: String, syncing: Bool) throws(NetworkError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .file("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let failure: String? = data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += written
            }
            return !syncing || fsync(descriptor) == 0 ? nil : String(cString: strerror(errno))
        }
        if let failure {
            unlink(path)
            throw .file("cannot write \(path): \(failure)")
        }
    }

    /// The file's bytes, or `nil` when there is none.
    private static func contents(of path: String) throws(NetworkError) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw .file("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // Read into a buffer of the file's size (plus one byte, to see a file that grew), not a fixed one:
        // a cold start reads thousands of small files.
        var info = stat()
        let expected = fstat(descriptor, &info) == 0 ? max(Int(info.st_size), 0) : 0
        var bytes = [UInt8](repeating: 0, count: expected + 1)
        var length = 0
        while true {
            if length == bytes.count { bytes += [UInt8](repeating: 0, count: max(bytes.count, 4_096)) }
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + length, buffer.count - length)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .file("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return Data(bytes[0..<length]) }
            length += count
        }
    }

    /// The name of the file that holds `key`'s entry in the directory: the key's 64-bit FNV-1a hash in hex,
    /// then `.entry` (the key itself is inside the file, and checked).
    /// - Parameter key: The entry's key.
    /// - Returns: The file name.
    public static func fileName(forKey key: String) -> String { fileName(for: key) }

    static func fileName(for key: String) -> String {
        let hash = EntryCoding.fnv1a(key.utf8)
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + ".entry"
    }
}
