import Foundation
import ResourceKit

/// One log file of a ``FileEntryStorage``, open for reading: written whole under a temporary name, synced, and
/// renamed to `<first>-<last>.log`, the range of batch numbers whose records it holds (one batch, or the
/// batches a merge rewrote into one file). Never changed once in place. Closed when the last reference
/// (the storage's list, or a location of an entry a reader is reading) goes away, so that a reader never
/// reads a descriptor that a merge closed and the system gave to another file.
final class EntryLogFile: Sendable {
    let first: UInt64
    let last: UInt64
    let descriptor: Int32
    /// The file's size.
    let size: Int

    var name: String { Self.name(first: first, last: last) }

    init(first: UInt64, last: UInt64, descriptor: Int32, size: Int) {
        self.first = first
        self.last = last
        self.descriptor = descriptor
        self.size = size
    }

    deinit { close(descriptor) }

    /// Opens the file at `path`, or returns `nil` when it cannot be opened.
    static func open(_ path: String, first: UInt64, last: UInt64) -> EntryLogFile? {
        let descriptor = openFile(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        // A file larger than this platform's `Int` addresses (2 GiB on a 32-bit watch) cannot be read whole.
        guard fstat(descriptor, &info) == 0, let size = Int(exactly: info.st_size) else {
            close(descriptor)
            return nil
        }
        return EntryLogFile(first: first, last: last, descriptor: descriptor, size: size)
    }

    static func name(first: UInt64, last: UInt64) -> String { hex(first) + "-" + hex(last) + ".log" }

    /// The batch range a log file's name says, or `nil` for another file: only the names ``name(first:last:)``
    /// makes (16 lower-case hex digits each), so that the storage opens every file it counts by the name it
    /// rebuilds (a `+` sign or upper-case digits would name another file on most file systems).
    static func range(ofName name: String) -> (first: UInt64, last: UInt64)? {
        guard name.hasSuffix(".log"), name.utf8.count == 37,
            name.utf8.dropLast(4).enumerated().allSatisfy({ offset, byte in
                offset == 16
                    ? byte == UInt8(ascii: "-")
                    : (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                        || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            })
        else { return nil }
        let parts = name.dropLast(4).split(separator: "-")
        guard parts.count == 2, let first = UInt64(parts[0], radix: 16), let last = UInt64(parts[1], radix: 16),
            first <= last
        else { return nil }
        return (first, last)
    }

    private static func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }

    /// `count` bytes at `offset`, or `nil` when the file ends before them or cannot be read.
    func read(at offset: Int, count: Int) -> [UInt8]? {
        guard count >= 0, offset >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
            }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { return nil }
            done += read
        }
        return bytes
    }

    /// What a scan of a file finds, in order.
    enum Found {
        /// A record whose checks all pass.
        case record(EntryCoding.Kind, key: String, offset: Int, length: Int)
        /// A record that fails a check; `key` when its header and key are whole (only its body is not).
        case damaged(key: String?)
    }

    /// Reads the whole file in order, checking every record. Past a record whose header is damaged, it looks
    /// for the next whole header; a file cut short ends with the record it cuts.
    func scan(_ visit: (Found) -> Void) {
        var reader = WindowReader(file: self)
        guard reader.bytes(at: 0, count: 8, { Array($0) == EntryCoding.fileMagic }) == true else {
            if size > 0 { visit(.damaged(key: nil)) }
            return
        }
        var offset = 8
        while offset < size {
            if let (header, key) = reader.header(at: offset) {
                let length = header.recordLength
                guard offset + length <= size else {
                    visit(.damaged(key: key))
                    return
                }
                let whole = reader.bytes(at: offset, count: length) { record in
                    let body = UnsafeRawBufferPointer(
                        rebasing: record[(EntryCoding.headerSize + header.keyLength)..<(length - 8)])
                    return EntryCoding.fnv1a(body) == EntryCoding.uint64(record, at: length - 8)
                }
                visit(
                    whole == true ? .record(header.kind, key: key, offset: offset, length: length) : .damaged(key: key))
                offset += length
            } else {
                visit(.damaged(key: nil))
                var next = offset + 1
                while next + EntryCoding.headerSize <= size, reader.header(at: next) == nil { next += 1 }
                guard next + EntryCoding.headerSize <= size else { return }
                offset = next
            }
        }
    }

    /// Reads a file through a window of a quarter of a megabyte (or one record, when larger).
    private struct WindowReader {
        let file: EntryLogFile
        var window: [UInt8] = []
        var start = 0

        init(file: EntryLogFile) { self.file = file }

        /// Runs `body` on the `count` bytes at `offset`; `nil` when the file does not hold them.
        mutating func bytes<T>(at offset: Int, count: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T? {
            guard offset >= 0, count >= 0, offset + count <= file.size else { return nil }
            if offset < start || offset + count > start + window.count {
                let length = min(max(count, 1 << 18), file.size - offset)
                guard let bytes = file.read(at: offset, count: length) else { return nil }
                window = bytes
                start = offset
            }
            let from = offset - start
            return window.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[from..<(from + count)])) }
        }

        /// The header and key of a record at `offset`, when both pass their checks.
        mutating func header(at offset: Int) -> (EntryCoding.Header, String)? {
            let size = file.size
            guard let header = bytes(at: offset, count: EntryCoding.headerSize, { EntryCoding.Header($0) }) ?? nil,
                header.keyLength <= size - offset - EntryCoding.headerSize
            else { return nil }
            let key: String?? = bytes(at: offset, count: EntryCoding.headerSize + header.keyLength) { bytes in
                let key = UnsafeRawBufferPointer(rebasing: bytes[EntryCoding.headerSize...])
                guard header.checks(header: bytes, key: key) else { return nil }
                return String(decoding: key, as: UTF8.self)
            }
            guard let key = key ?? nil else { return nil }
            return (header, key)
        }
    }
}

/// A new log file being written under a temporary name; ``finish(as:in:)`` syncs it and renames it into place.
final class EntryLogWriter {
    let path: String
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var isOpen = true
    /// The bytes written so far: the offset of the next record.
    private(set) var size = 0

    init(directory prefix: String) throws(NetworkError) {
        path = prefix + ".tmp-" + UUID().uuidString
        descriptor = openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .file("cannot create \(path): \(errorText())") }
        buffer.reserveCapacity(1 << 16)
        append(EntryCoding.fileMagic)
    }

    deinit { abandon() }

    /// Adds bytes at ``size``, returning their offset.
    @discardableResult
    func append(_ bytes: some Collection<UInt8>) -> Int {
        let offset = size
        buffer += bytes
        size += bytes.count
        return offset
    }

    /// Writes what is buffered once there is a megabyte of it.
    func flushIfLarge() throws(NetworkError) {
        if buffer.count >= 1 << 20 { try flush() }
    }

    private func flush() throws(NetworkError) {
        let failure: String? = buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errorText()
                }
                offset += written
            }
            return nil
        }
        buffer.removeAll(keepingCapacity: true)
        if let failure { throw .file("cannot write \(path): \(failure)") }
    }

    /// Writes the rest, syncs the file and renames it to `name` in the directory of `prefix`; the caller then
    /// syncs the directory.
    /// - Returns: A descriptor of the file, open for reading (opened before the rename, so that it cannot fail
    ///   once the file is in place).
    func finish(as name: String, in prefix: String) throws(NetworkError) -> Int32 {
        try flush()
        guard Platform.fullSync(descriptor) else { throw .file("cannot sync \(path): \(errorText())") }
        let reading = openFile(path, O_RDONLY | O_CLOEXEC)
        guard reading >= 0 else { throw .file("cannot open \(path): \(errorText())") }
        close(descriptor)
        isOpen = false
        guard rename(path, prefix + name) == 0 else {
            let text = errorText()
            close(reading)
            unlink(path)
            throw .file("cannot rename a log file into place: \(text)")
        }
        return reading
    }

    /// Closes and removes the temporary file, unless it was renamed into place.
    func abandon() {
        guard isOpen else { return }
        isOpen = false
        close(descriptor)
        unlink(path)
    }
}

/// Syncs a directory, so that the renames and removals in it survive a crash.
func syncDirectory(_ path: String) throws(NetworkError) {
    let descriptor = openFile(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard descriptor >= 0 else { throw .file("cannot open \(path): \(errorText())") }
    defer { close(descriptor) }
    guard Platform.fullSync(descriptor) else { throw .file("cannot sync \(path): \(errorText())") }
}

/// The text of `errno`.
func errorText() -> String { String(cString: strerror(errno)) }

/// `open(2)`, under a name of its own: `EntryLogFile` declares an `open` of its own.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { open(path, flags, mode) }

/// `.lock` in a storage's directory: an advisory lock (`flock`) that orders the writes of every storage open on
/// the directory, in this process or another, and a counter each write bumps, so that a storage sees that
/// another changed the files and reads them again. It exists once something was written, and a wipe removes it.
final class EntryDirectoryLock: Sendable {
    /// What the lock file says now: its identity (inode, and a random number drawn when it was made: a new file
    /// after a wipe may reuse the inode) and its counter.
    struct Token: Equatable, Sendable {
        var inode: UInt64
        var nonce: UInt64
        var counter: UInt64
        static let absent = Token(inode: 0, nonce: 0, counter: 0)
    }

    /// An open lock file.
    final class Handle: Sendable {
        let descriptor: Int32
        let inode: UInt64

        init?(path: String, creating: Bool) {
            descriptor = openFile(path, (creating ? O_CREAT : 0) | O_RDWR | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { return nil }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                close(descriptor)
                return nil
            }
            inode = UInt64(info.st_ino)
        }

        deinit { close(descriptor) }

        /// The file's random number and counter: zeros in a new file, a counter of `UInt64.max` in one a wipe
        /// removed.
        var contents: (nonce: UInt64, counter: UInt64) {
            var values: (UInt64, UInt64) = (0, 0)
            let read = withUnsafeMutableBytes(of: &values) { pread(descriptor, $0.baseAddress, 16, 0) }
            guard read == 16 else { return (0, 0) }
            return (UInt64(littleEndian: values.0), UInt64(littleEndian: values.1))
        }

        var counter: UInt64 { contents.counter }

        func token() -> Token {
            let (nonce, counter) = contents
            return Token(inode: inode, nonce: nonce, counter: counter)
        }

        /// Draws the file's random number, when it has none yet (a new file). Call it holding the lock.
        func stampIfNew() throws(NetworkError) {
            guard contents.nonce == 0 else { return }
            var values = (UInt64.random(in: 1...UInt64.max).littleEndian, UInt64(0))
            let written = withUnsafeBytes(of: &values) { pwrite(descriptor, $0.baseAddress, 16, 0) }
            guard written == 16 else { throw .file("cannot write the directory's lock file: \(errorText())") }
        }

        func publish(_ counter: UInt64) throws(NetworkError) {
            var value = counter.littleEndian
            let written = withUnsafeBytes(of: &value) { pwrite(descriptor, $0.baseAddress, 8, 8) }
            guard written == 8 else { throw .file("cannot write the directory's lock file: \(errorText())") }
        }
    }

    let path: String
    private let handle = Locked<Handle?>(nil)

    init(directory prefix: String) { path = prefix + ".lock" }

    /// The lock file's token now; `Token.absent` when there is none.
    func token() -> Token {
        if let current = handle.withLock({ $0 }) {
            let token = current.token()
            if token.counter != .max { return token }
        }
        let opened = Handle(path: path, creating: false)
        handle.withLock { $0 = opened }
        return opened?.token() ?? .absent
    }

    /// Runs `body` holding the lock, with the lock file (made if needed) and its counter before `body`.
    func exclusively<T>(_ body: (Handle, Token) throws(NetworkError) -> T) throws(NetworkError) -> T {
        while true {
            guard let current = Handle(path: path, creating: true) else {
                throw .file("cannot open \(path): \(errorText())")
            }
            while flock(current.descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else { throw .file("cannot lock \(path): \(errorText())") }
            }
            defer { flock(current.descriptor, LOCK_UN) }
            // A wipe may have removed the file between the open and the lock: lock the one in place.
            var info = stat()
            guard stat(path, &info) == 0, UInt64(info.st_ino) == current.inode else { continue }
            handle.withLock { $0 = current }
            try current.stampIfNew()
            var token = current.token()
            if token.counter == .max { token.counter = 0 }
            return try body(current, token)
        }
    }

    /// Marks the lock file as wiped, for storages that hold it open, and removes it. Call it holding the lock.
    func retire(_ current: Handle) {
        try? current.publish(.max)
        unlink(path)
    }
}
