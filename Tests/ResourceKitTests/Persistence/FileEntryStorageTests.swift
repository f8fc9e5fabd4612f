import Foundation
import ResourceKit
import Testing

@Suite struct FileEntryStorageTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)")
    let loaded = Date(timeIntervalSince1970: 1_764_000_000.25)

    func entry(_ key: String, _ text: String, tag: String? = nil) -> PersistedEntry {
        PersistedEntry(
            key: key, value: Data(text.utf8), entityTag: tag, lastModified: tag.map { "m-\($0)" }, loadedAt: loaded)
    }

    func file(of key: String) -> URL { directory.appendingPathComponent(FileEntryStorage.fileName(forKey: key)) }

    @Test func entriesRoundTripAndSurviveReopening() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        #expect(try storage.entry(for: "a") == nil)
        let a = entry("a", "alpha", tag: "\"1\"")
        let b = PersistedEntry(key: "posts/é/42", value: Data(), loadedAt: loaded, schema: 7)
        try storage.store([a, b])
        #expect(try storage.entry(for: "a") == a)
        #expect(try storage.entry(for: "posts/é/42") == b)
        let reopened = try FileEntryStorage(directory: directory)
        #expect(try reopened.entry(for: "a") == a)
        #expect(try Set(reopened.allKeys()) == ["a", "posts/é/42"])
        #expect(reopened.totalBytes == storage.totalBytes)
    }

    @Test func aStoreReplacesAndTheLastOfOneKeyWins() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "one")])
        try storage.store([entry("a", "two"), entry("a", "three")])
        #expect(try storage.entry(for: "a")?.value == Data("three".utf8))
        #expect(try storage.allKeys() == ["a"])
    }

    @Test func removingOneOrAll() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "1"), entry("b", "2"), entry("c", "3")])
        try storage.removeEntries(for: ["b", "never"])
        #expect(try Set(storage.allKeys()) == ["a", "c"])
        try storage.removeAll()
        #expect(try storage.allKeys() == [])
        #expect(storage.totalBytes == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test func aDamagedFileIsDroppedNeverReturned() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let keys = (0..<6).map { "k\($0)" }
        try storage.store(keys.map { entry($0, String(repeating: $0, count: 40), tag: $0) })
        // k5's file holds k0's entry, whole and valid: the key inside does not match.
        try FileManager.default.removeItem(at: file(of: "k5"))
        try FileManager.default.copyItem(at: file(of: "k0"), to: file(of: "k5"))
        var bytes = try Data(contentsOf: file(of: "k0"))
        // One bit flipped in the value, in the checksum, in the magic; a truncated file; an empty one.
        bytes[bytes.count - 10] ^= 0x04
        try bytes.write(to: file(of: "k0"))
        var checksum = try Data(contentsOf: file(of: "k1"))
        checksum[14] ^= 0x80
        try checksum.write(to: file(of: "k1"))
        var magic = try Data(contentsOf: file(of: "k2"))
        magic[0] = UInt8(ascii: "X")
        try magic.write(to: file(of: "k2"))
        let truncated = try Data(contentsOf: file(of: "k3"))
        try truncated.prefix(truncated.count - 1).write(to: file(of: "k3"))
        try Data().write(to: file(of: "k4"))
        let reopened = try FileEntryStorage(directory: directory)
        for key in keys { #expect(try reopened.entry(for: key) == nil, "\(key)") }
        #expect(reopened.droppedCount == 6)
        // Dropped means gone: the next open finds nothing of them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test func aCrashsTemporaryFilesAreRemovedOnOpen() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try FileEntryStorage(directory: directory)
        let leftover = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        try Data("half an entry".utf8).write(to: leftover)
        _ = try FileEntryStorage(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    @Test func pastTheBoundTheLeastRecentlyUsedGo() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let value = String(repeating: "x", count: 1_000)
        let one = EntrySize.of(entry("k0", value))
        let storage = try FileEntryStorage(directory: directory, maximumBytes: one * 3)
        try storage.store([entry("k0", value)])
        try storage.store([entry("k1", value)])
        try storage.store([entry("k2", value)])
        // Reading k0 makes k1 the least recently used.
        #expect(try storage.entry(for: "k0") != nil)
        try storage.store([entry("k3", value)])
        #expect(try storage.entry(for: "k1") == nil)
        #expect(try Set(storage.allKeys()) == ["k0", "k2", "k3"])
        #expect(storage.totalBytes <= one * 3)
        // An entry larger than the bound is still kept, alone.
        try storage.store([entry("big", String(repeating: "y", count: 10_000))])
        #expect(try storage.allKeys() == ["big"])
    }

    @Test func aDirectoryThatCannotBeMadeIsAFileError() throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("blocker-\(UUID().uuidString)")
        try Data("a file".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let error = #expect(throws: NetworkError.self) {
            _ = try FileEntryStorage(directory: blocker.appendingPathComponent("inside"))
        }
        #expect(error?.code == .file)
    }
}

/// The size of an entry's file, measured by storing it alone.
enum EntrySize {
    static func of(_ entry: PersistedEntry) -> Int {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("size-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let storage = try? FileEntryStorage(directory: directory), (try? storage.store([entry])) != nil else {
            return 0
        }
        return storage.totalBytes
    }
}
