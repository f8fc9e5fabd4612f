import Foundation
import ResourceKit
import TestSupport
import Testing

@testable import ResourceKitPersistence

/// The directory holds at most twice its entries' bytes, or their bytes plus 64 KB, after every write: a
/// removal included.
@Suite(.offThePool) struct StorageBoundTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bound-\(UUID().uuidString)")

    /// The bytes of the log files in the directory.
    var logBytes: Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.reduce(0) { total, name in
            let path = directory.appendingPathComponent(name).path
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            return total + size
        }
    }

    @Test func removingEveryEntryLeavesTheFilesWithinTheBound() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let big = Data(repeating: 7, count: 512 << 10)
        let loaded = Date(timeIntervalSince1970: 1)
        try storage.store([
            PersistedEntry(key: "a", value: big, loadedAt: loaded),
            PersistedEntry(key: "b", value: big, loadedAt: loaded),
        ])
        #expect(logBytes > 1 << 20)
        try storage.removeEntries(for: ["a", "b"])
        #expect(storage.totalBytes == 0)
        #expect(logBytes <= 64 << 10)
        #expect(try storage.allKeys().isEmpty)
        #expect(try FileEntryStorage(directory: directory).allKeys().isEmpty)
    }

    @Test func replacingAnEntryWithASmallOneLeavesTheFilesWithinTheBound() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let loaded = Date(timeIntervalSince1970: 1)
        try storage.store([PersistedEntry(key: "a", value: Data(repeating: 1, count: 1 << 20), loadedAt: loaded)])
        try storage.store([PersistedEntry(key: "a", value: Data("small".utf8), loadedAt: loaded)])
        #expect(logBytes <= max(2 * storage.totalBytes, storage.totalBytes + (64 << 10)))
        #expect(try storage.entry(for: "a")?.value == Data("small".utf8))
    }
}
