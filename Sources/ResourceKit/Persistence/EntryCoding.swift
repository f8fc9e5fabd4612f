import Foundation

/// The entry file format: `RKE1`, the payload's length and FNV-1a 64-bit checksum (little-endian), then the
/// payload: schema, loaded-at, key, value, entity tag and last-modified, each length-prefixed.
enum EntryCoding {
    static let magic: [UInt8] = Array("RKE1".utf8)

    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    static func encode(_ entry: PersistedEntry) -> Data {
        var payload: [UInt8] = []
        payload.reserveCapacity(entry.value.count + entry.key.utf8.count + 64)
        append(UInt64(bitPattern: Int64(entry.schema)), to: &payload)
        append(entry.loadedAt.timeIntervalSince1970.bitPattern, to: &payload)
        append(Array(entry.key.utf8), to: &payload)
        append(Array(entry.value), to: &payload)
        appendOptional(entry.entityTag, to: &payload)
        appendOptional(entry.lastModified, to: &payload)
        var file = magic
        append(UInt64(payload.count), to: &file)
        append(fnv1a(payload), to: &file)
        file += payload
        return Data(file)
    }

    static func decode(_ data: Data) -> PersistedEntry? {
        let bytes = [UInt8](data)
        guard bytes.count >= 20, Array(bytes[0..<4]) == magic else { return nil }
        var reader = Reader(bytes: bytes, offset: 4)
        guard let length = reader.uint64(), let checksum = reader.uint64(), length == UInt64(bytes.count - 20),
            fnv1a(bytes[20...]) == checksum
        else { return nil }
        guard let schema = reader.uint64(), let loadedAt = reader.uint64(), let key = reader.field(),
            let value = reader.field(), let tag = reader.optional(), let modified = reader.optional(),
            reader.offset == bytes.count
        else { return nil }
        return PersistedEntry(
            key: String(decoding: key, as: UTF8.self), value: Data(value), entityTag: tag, lastModified: modified,
            loadedAt: Date(timeIntervalSince1970: Double(bitPattern: loadedAt)), schema: Int(Int64(bitPattern: schema)))
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func append(_ field: [UInt8], to bytes: inout [UInt8]) {
        append(UInt64(field.count), to: &bytes)
        bytes += field
    }

    private static func appendOptional(_ text: String?, to bytes: inout [UInt8]) {
        guard let text else {
            bytes.append(0)
            return
        }
        bytes.append(1)
        append(Array(text.utf8), to: &bytes)
    }

    struct Reader {
        let bytes: [UInt8]
        var offset: Int

        mutating func uint64() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
            offset += 8
            return value
        }

        mutating func field() -> [UInt8]? {
            guard let length = uint64(), length <= UInt64(bytes.count - offset) else { return nil }
            defer { offset += Int(length) }
            return Array(bytes[offset..<(offset + Int(length))])
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
