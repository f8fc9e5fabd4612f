import Foundation
import ResourceKit
import TestSupport
import Testing

@testable import ResourceKitPersistence

/// A log file named for the last batches a `UInt64` counts, or with a name the storage does not make (a sign,
/// upper-case digits), damaged or put there by something else, neither traps nor keeps the storage from
/// opening: it goes on writing.
@Suite(.offThePool) struct DamagedStorageNameTests {
    @Test(arguments: [
        "ffffffffffffffff-ffffffffffffffff.log", "fffffffffffffffe-fffffffffffffffe.log",
        "0000000000000001-8000000000000000.log", "+000000000000001-0000000000000002.log",
        "0000000000000001-000000000000000A.log", "0000000000000001-00000000000000-2.log",
    ])
    func aForeignOrDamagedLogNameNeitherTrapsNorBlocks(name: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: Data()))
        let storage = try FileEntryStorage(directory: directory)
        let entry = PersistedEntry(key: "a", value: Data("alpha".utf8), loadedAt: Date(timeIntervalSince1970: 1))
        try storage.store([entry])
        try storage.store([PersistedEntry(key: "b", value: Data("beta".utf8), loadedAt: Date(timeIntervalSince1970: 2))]
        )
        #expect(try storage.entry(for: "a") == entry)
        #expect(try Set(storage.allKeys()) == ["a", "b"])
    }

    /// An outbox whose storage holds a change numbered past what its count reaches loads without a trap.
    @Test func anOutboxKeyNumberedForTheLastChangeDoesNotTrap() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([
            PersistedEntry(key: "change-18446744073709551615", value: Data("{}".utf8), loadedAt: Date())
        ])
        let outbox = Outbox(storage: storage)
        #expect(outbox.pending.isEmpty)
    }
}
