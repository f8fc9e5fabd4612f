import Foundation
import ResourceKit

/// The records of a ``FileEntryStorage`` log file. A log file is `RKLOG` and a version (8 bytes), then records:
///
/// | bytes | what |
/// |---|---|
/// | 4 | `RKR1` |
/// | 1 | kind: 1 an entry, 2 a removal, 3 a wipe of everything before |
/// | 3 | zero |
/// | 4 | the key's length, little-endian |
/// | 4 | the body's length |
/// | 8 | FNV-1a 64 of the 16 bytes above and the key |
/// | key | UTF-8 |
/// | body | an entry's schema, loaded-at, value, entity tag and last-modified, each length-prefixed; then, only when the validators are an earlier version's, one zero byte |
/// | 8 | FNV-1a 64 of the body |
///
/// The key has a checksum of its own, apart from the body's, so that a damaged value still names the entry it
/// belonged to: that entry is dropped rather than replaced by an older record of its key.
enum EntryCoding {
    static let fileMagic: [UInt8] = Array("RKLOG\0\0\u{1}".utf8)
    static let recordMagic: [UInt8] = Array("RKR1".utf8)
    static let headerSize = 24
    static let trailerSize = 8

    enum Kind: UInt8 {
        case entry = 1
        case removal = 2
        case wipe = 3
    }

    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    static func fnv1a(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = seed
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// An entry's record, or `nil` when its key or body is too long for the format (4 GB).
    static func record(of entry: PersistedEntry) -> [UInt8]? {
        var body: [UInt8] = []
        body.reserveCapacity(entry.value.count + 64)
        append(UInt64(bitPattern: Int64(entry.schema)), to: &body)
        append(entry.loadedAt.timeIntervalSince1970.bitPattern, to: &body)
        append(UInt64(entry.value.count), to: &body)
        body += entry.value
        appendOptional(entry.entityTag, to: &body)
        appendOptional(entry.lastModified, to: &body)
        // Written only when it says something: an entry of the value's own validators is as every earlier
        // version of the format wrote it, and reads there too.
        if !entry.validatorsDescribeValue { body.append(0) }
        return record(.entry, key: entry.key, body: body)
    }

    /// A record that removes `key`, or wipes everything before it (`.wipe`, with an empty key).
    static func record(_ kind: Kind, key: String, body: [UInt8] = []) -> [UInt8]? {
        let key = Array(key.utf8)
        guard key.count <= UInt32.max, body.count <= UInt32.max else { return nil }
        var record = recordMagic
        record.reserveCapacity(headerSize + key.count + body.count + trailerSize)
        record += [kind.rawValue, 0, 0, 0]
        append32(UInt32(key.count), to: &record)
        append32(UInt32(body.count), to: &record)
        append(fnv1a(record[0..<16] + key), to: &record)
        record += key
        record += body
        append(fnv1a(body), to: &record)
        return record
    }

    /// What a record's 24-byte header says, when its magic and kind are right (the key is checked apart).
    struct Header {
        var kind: Kind
        var keyLength: Int
        var bodyLength: Int
        var checksum: UInt64
        var recordLength: Int { headerSize + keyLength + bodyLength + trailerSize }

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= headerSize, bytes[0] == recordMagic[0], bytes[1] == recordMagic[1],
                bytes[2] == recordMagic[2], bytes[3] == recordMagic[3], let kind = Kind(rawValue: bytes[4]),
                bytes[5] == 0, bytes[6] == 0, bytes[7] == 0
            else { return nil }
            // On a 32-bit `Int` (watchOS devices), a damaged length of 2³¹ or more is no header (it would trap),
            // and neither is one whose record length would not fit.
            guard let keyLength = Int(exactly: EntryCoding.uint32(bytes, at: 8)),
                let bodyLength = Int(exactly: EntryCoding.uint32(bytes, at: 12)),
                keyLength <= Int.max >> 2, bodyLength <= Int.max >> 2
            else { return nil }
            self.kind = kind
            self.keyLength = keyLength
            self.bodyLength = bodyLength
            checksum = EntryCoding.uint64(bytes, at: 16)
        }

        /// Whether `key` (the bytes after the header) is the one the header's checksum covers.
        func checks(header: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> Bool {
            EntryCoding.fnv1a(key, seed: EntryCoding.fnv1a(UnsafeRawBufferPointer(rebasing: header[0..<16])))
                == checksum
        }
    }

    /// The kind and key of a whole record, when every check passes.
    static func check(_ record: UnsafeRawBufferPointer) -> (kind: Kind, key: String, body: UnsafeRawBufferPointer)? {
        guard let header = Header(record), header.recordLength == record.count else { return nil }
        let key = UnsafeRawBufferPointer(rebasing: record[headerSize..<(headerSize + header.keyLength)])
        let bodyStart = headerSize + header.keyLength
        let body = UnsafeRawBufferPointer(rebasing: record[bodyStart..<(bodyStart + header.bodyLength)])
        guard header.checks(header: record, key: key), fnv1a(body) == uint64(record, at: record.count - trailerSize)
        else { return nil }
        return (header.kind, String(decoding: key, as: UTF8.self), body)
    }

    /// The entry of a whole record of `key`, when every check passes and it is an entry of that key.
    static func entry(from record: UnsafeRawBufferPointer, key: String) -> PersistedEntry? {
        guard let (kind, found, body) = check(record), kind == .entry, found == key else { return nil }
        var reader = Reader(bytes: body, offset: 0)
        // A schema this platform's `Int` cannot hold (a 32-bit watch reading another device's entry) is an entry
        // of another schema: dropped, never trapped on.
        guard let stored = reader.uint64(), let schema = Int(exactly: Int64(bitPattern: stored)),
            let loadedAt = reader.uint64(), let value = reader.field(), let tag = reader.optional(),
            let modified = reader.optional()
        else { return nil }
        let describesValue = reader.offset == body.count
        guard describesValue || (reader.offset + 1 == body.count && body[reader.offset] == 0) else { return nil }
        var entry = PersistedEntry(
            key: key, value: Data(value), entityTag: tag, lastModified: modified,
            loadedAt: Date(timeIntervalSince1970: Double(bitPattern: loadedAt)), schema: schema)
        entry.validatorsDescribeValue = describesValue
        return entry
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(index * 8) }
        return value
    }

    static func uint64(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
        return value
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func append32(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func appendOptional(_ text: String?, to bytes: inout [UInt8]) {
        guard let text else {
            bytes.append(0)
            return
        }
        bytes.append(1)
        append(UInt64(text.utf8.count), to: &bytes)
        bytes += text.utf8
    }

    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset: Int

        mutating func uint64() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            defer { offset += 8 }
            return EntryCoding.uint64(bytes, at: offset)
        }

        mutating func field() -> UnsafeRawBufferPointer? {
            guard let length = uint64(), length <= UInt64(bytes.count - offset) else { return nil }
            defer { offset += Int(length) }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))])
        }

        mutating func optional() -> String?? {
            guard offset < bytes.count else { return nil }
            let flag = bytes[offset]
            offset += 1
            switch flag {
            case 0: return .some(nil)
            case 1: return field().map { .some(String(decoding: $0, as: UTF8.self)) }
            default: return nil
            }
        }
    }
}
