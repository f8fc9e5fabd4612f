import Foundation
import ResourceKit
import TestSupport
import Testing

@testable import ResourceKitPersistence

@Suite(.offThePool) struct FileEntryStorageTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entries-\(UUID().uuidString)")
    let loaded = Date(timeIntervalSince1970: 1_764_000_000.25)

    func entry(_ key: String, _ text: String, tag: String? = nil) -> PersistedEntry {
        PersistedEntry(
            key: key, value: Data(text.utf8), entityTag: tag, lastModified: tag.map { "m-\($0)" }, loadedAt: loaded)
    }

    /// The log files in the directory.
    var logFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".log") }
            .sorted()
    }

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
        #expect(try FileEntryStorage(directory: directory).entry(for: "a")?.value == Data("three".utf8))
    }

    @Test func aBatchIsOneFileHoweverManyEntriesItHolds() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store((0..<1_000).map { entry("k\($0)", "value \($0)") })
        #expect(logFiles.count == 1)
        #expect(try storage.allKeys().count == 1_000)
        #expect(try FileEntryStorage(directory: directory).entry(for: "k999")?.value == Data("value 999".utf8))
    }

    @Test func storingAndRemovingIsOneBatch() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "1"), entry("b", "2"), entry("c", "3")])
        let last = { (name: String) in UInt64(name.dropLast(4).split(separator: "-")[1], radix: 16) ?? 0 }
        let before = logFiles.map(last).max() ?? 0
        // A key both stored and removed is stored.
        try storage.store([entry("d", "4"), entry("c", "33")], removing: ["a", "c", "never"])
        #expect(logFiles.map(last).max() == before + 1)
        let reopened = try FileEntryStorage(directory: directory)
        #expect(try Set(reopened.allKeys()) == ["b", "c", "d"])
        #expect(try reopened.entry(for: "c")?.value == Data("33".utf8))
    }

    @Test func removingOneOrAll() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "1"), entry("b", "2"), entry("c", "3")])
        try storage.removeEntries(for: ["b", "never"])
        #expect(try Set(storage.allKeys()) == ["a", "c"])
        #expect(try Set(FileEntryStorage(directory: directory).allKeys()) == ["a", "c"])
        try storage.removeAll()
        #expect(try storage.allKeys() == [])
        #expect(storage.totalBytes == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
        try storage.store([entry("d", "4")])
        #expect(try FileEntryStorage(directory: directory).allKeys() == ["d"])
    }

    /// Changes the bytes of the file that holds `key`'s newest record.
    func damage(_ storage: FileEntryStorage, _ key: String, _ change: (inout Data, Range<Int>) -> Void) throws {
        let location = try #require(storage.location(ofKey: key))
        let url = URL(fileURLWithPath: location.path)
        var bytes = try Data(contentsOf: url)
        change(&bytes, location.offset..<(location.offset + location.length))
        try bytes.write(to: url)
    }

    @Test func aDamagedRecordIsDroppedNeverReturnedAndTheOthersStay() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let keys = (0..<8).map { "k\($0)" }
        try storage.store(keys.map { entry($0, String(repeating: $0, count: 40), tag: $0) })
        // A bit of k0's value, of k1's value checksum, a byte of k2's key, of k4's record magic, of k6's key
        // length; k7 (the last record) cut short. k3 and k5 are whole.
        try damage(storage, "k0") { bytes, record in bytes[record.upperBound - 20] ^= 0x04 }
        try damage(storage, "k1") { bytes, record in bytes[record.upperBound - 1] ^= 0x80 }
        try damage(storage, "k2") { bytes, record in bytes[record.lowerBound + 24] ^= 0x01 }
        try damage(storage, "k4") { bytes, record in bytes[record.lowerBound] = UInt8(ascii: "X") }
        try damage(storage, "k6") { bytes, record in bytes[record.lowerBound + 8] ^= 0x10 }
        try damage(storage, "k7") { bytes, record in bytes = bytes.prefix(record.upperBound - 1) }
        let reopened = try FileEntryStorage(directory: directory)
        for key in keys where key != "k3" && key != "k5" { #expect(try reopened.entry(for: key) == nil, "\(key)") }
        for key in ["k3", "k5"] {
            #expect(try reopened.entry(for: key) == entry(key, String(repeating: key, count: 40), tag: key))
        }
        #expect(reopened.droppedCount == 6)
        #expect(try Set(reopened.allKeys()) == ["k3", "k5"])
        // Dropped means gone: opening rewrote the files, and the next open finds no damage.
        let again = try FileEntryStorage(directory: directory)
        #expect(again.droppedCount == 0)
        #expect(try Set(again.allKeys()) == ["k3", "k5"])
    }

    @Test func aRecordDamagedAfterOpeningIsDroppedWhenRead() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "alpha"), entry("b", "beta")])
        try damage(storage, "a") { bytes, record in bytes[record.upperBound - 12] ^= 0x01 }
        #expect(try storage.entry(for: "a") == nil)
        #expect(storage.droppedCount == 1)
        #expect(try storage.allKeys() == ["b"])
        #expect(try storage.entry(for: "b")?.value == Data("beta".utf8))
    }

    @Test func aDamagedNewerRecordDoesNotBringBackTheOlderOne() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        // A large first batch, so that the second is a file of its own rather than merged with it.
        let filler = String(repeating: "f", count: 2_000)
        try storage.store([entry("k", "old")] + (0..<20).map { entry("filler\($0)", filler) })
        try storage.store([entry("k", "new")])
        #expect(logFiles.count == 2)
        try damage(storage, "k") { bytes, record in bytes[record.upperBound - 10] ^= 0x01 }
        let reopened = try FileEntryStorage(directory: directory)
        #expect(try reopened.entry(for: "k") == nil)
        #expect(reopened.droppedCount == 1)
        #expect(try FileEntryStorage(directory: directory).entry(for: "k") == nil)
    }

    @Test func aRemovalHidesTheOlderRecordAcrossReopeningAndMerges() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let filler = String(repeating: "f", count: 2_000)
        try storage.store([entry("k", "old")] + (0..<20).map { entry("filler\($0)", filler) })
        try storage.removeEntries(for: ["k"])
        #expect(logFiles.count == 2)
        #expect(try FileEntryStorage(directory: directory).entry(for: "k") == nil)
        // The next small batch merges the removal's file, not the first one: the removal must stay.
        try storage.store([entry("other", "1")])
        #expect(logFiles.count == 2)
        let reopened = try FileEntryStorage(directory: directory)
        #expect(try reopened.entry(for: "k") == nil)
        #expect(try reopened.entry(for: "other")?.value == Data("1".utf8))
        #expect(try Set(reopened.allKeys()) == Set(["other"] + (0..<20).map { "filler\($0)" }))
    }

    @Test func filesAMergeLeftBehindAreRemovedOnOpen() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        try storage.store([entry("a", "1"), entry("b", "1")])
        let before = try #require(logFiles.first)
        let kept = try Data(contentsOf: directory.appendingPathComponent(before))
        // The second batch is as large as the first: it is merged with it into one file.
        try storage.store([entry("a", "2"), entry("c", "1")])
        #expect(logFiles.count == 1 && logFiles != [before])
        // As if the process died after the merged file was in place and before the old one was removed.
        try kept.write(to: directory.appendingPathComponent(before))
        let reopened = try FileEntryStorage(directory: directory)
        #expect(logFiles.count == 1 && logFiles != [before])
        #expect(try reopened.entry(for: "a")?.value == Data("2".utf8))
        #expect(try reopened.entry(for: "b")?.value == Data("1".utf8))
        #expect(reopened.droppedCount == 0)
    }

    /// Random batches of stores and removals, some reopenings: after each step the storage agrees with a
    /// dictionary, and the files stay few and within the documented bound.
    @Test(arguments: [1, 2, 3, 4]) func randomBatchesAgreeWithAModel(seed: UInt64) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var random = SeededGenerator(state: seed)
        var model: [String: PersistedEntry] = [:]
        var storage = try FileEntryStorage(directory: directory)
        let steps = max(200, (Int(ProcessInfo.processInfo.environment["RESOURCEKIT_SCHEDULES"] ?? "") ?? 0) / 5)
        for step in 0..<steps {
            switch random.next() % 10 {
            case 0:
                storage = try FileEntryStorage(directory: directory)
            case 1, 2:
                let keys = (0..<(1 + random.next() % 4)).map { _ in "k\(random.next() % 40)" }
                try storage.removeEntries(for: keys)
                for key in keys { model[key] = nil }
            default:
                let batch = (0..<(1 + random.next() % (random.next() % 5 == 0 ? 60 : 5))).map { _ in
                    let key = "k\(random.next() % 40)"
                    return entry(key, "\(step)-" + String(repeating: "v", count: Int(random.next() % 300)))
                }
                try storage.store(batch)
                for item in batch { model[item.key] = item }
            }
            #expect(try Set(storage.allKeys()) == Set(model.keys), "seed \(seed), step \(step)")
            #expect(storage.logFileCount <= 26, "seed \(seed), step \(step): \(storage.logFileCount) files")
        }
        let reopened = try FileEntryStorage(directory: directory)
        for (key, value) in model { #expect(try reopened.entry(for: key) == value, "seed \(seed): \(key)") }
        #expect(try Set(reopened.allKeys()) == Set(model.keys))
        #expect(reopened.droppedCount == 0)
        let fileBytes = logFiles.reduce(0) { total, name in
            total
                + ((try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[
                    .size] as? Int) ?? 0)
        }
        // As documented: at most twice the entries' bytes, or the entries' bytes plus 64 KB when that is more
        // (and the last batch's records, which no merge has taken yet).
        let bound = max(2 * reopened.totalBytes, reopened.totalBytes + (64 << 10))
        #expect(fileBytes <= bound + 1_000, "seed \(seed): \(fileBytes) bytes for \(reopened.totalBytes)")
    }

    @Test func aSecondStorageOnTheDirectorySeesWhatTheFirstWrites() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try FileEntryStorage(directory: directory)
        let reader = try FileEntryStorage(directory: directory)
        #expect(try reader.allKeys() == [])
        try writer.store([entry("a", "1"), entry("b", "1")])
        #expect(try reader.entry(for: "a")?.value == Data("1".utf8))
        try writer.store([entry("a", "2")])
        try writer.removeEntries(for: ["b"])
        #expect(try reader.entry(for: "a")?.value == Data("2".utf8))
        #expect(try reader.entry(for: "b") == nil)
        #expect(try reader.allKeys() == ["a"])
        // And the other way round, through a merge of the first one's files.
        try reader.store([entry("c", "3"), entry("d", "4")])
        #expect(try Set(writer.allKeys()) == ["a", "c", "d"])
        try writer.removeAll()
        #expect(try reader.allKeys() == [])
        #expect(try reader.entry(for: "a") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
        try reader.store([entry("e", "5")])
        #expect(try writer.allKeys() == ["e"])
    }

    @Test func aWipeCutShortByACrashNeverBringsBackWhatItRemoved() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let dying = try FileEntryStorage(directory: directory)
        try dying.store([entry("a", "1"), entry("b", "2")])
        // Another storage, open before the crash, knows a and b and is told nothing.
        let other = try FileEntryStorage(directory: directory)
        #expect(try other.entry(for: "a") != nil)
        try dying.wipeAndDieBeforeRemovingFiles()
        // Its next write reads the wipe and removes what it hides before a merge drops the wipe's record.
        try other.store([entry("c", "3")])
        #expect(try Set(other.allKeys()) == ["c"])
        let reopened = try FileEntryStorage(directory: directory)
        #expect(try Set(reopened.allKeys()) == ["c"])
        #expect(try reopened.entry(for: "a") == nil)
        // And a storage opened after the crash finishes the wipe itself.
        try dying.store([entry("d", "4")])
        try dying.wipeAndDieBeforeRemovingFiles()
        #expect(try FileEntryStorage(directory: directory).allKeys() == [])
        try other.store([entry("e", "5")])
        #expect(try FileEntryStorage(directory: directory).allKeys() == ["e"])
    }

    @Test func aStorageSeesAWipeAndTheWritesAfterItEvenWhenTheCountsMatchAgain() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let watcher = try FileEntryStorage(directory: directory)
        try watcher.store([entry("a", "1")])
        #expect(try watcher.allKeys() == ["a"])
        // Wiped by another, then one write by a third: the lock file is new, and its count is what the watcher
        // last saw (its inode may be the old one's too).
        try FileEntryStorage(directory: directory).removeAll()
        try FileEntryStorage(directory: directory).store([entry("b", "2")])
        #expect(try watcher.allKeys() == ["b"])
        #expect(try watcher.entry(for: "a") == nil)
        #expect(try watcher.entry(for: "b")?.value == Data("2".utf8))
    }

    @Test func twoStoragesWritingAtOnceLoseNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storages = [try FileEntryStorage(directory: directory), try FileEntryStorage(directory: directory)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, storage) in storages.enumerated() {
                group.addTask {
                    for round in 0..<150 {
                        try storage.store([entry("s\(number)-\(round % 30)", "\(round)")])
                        if round % 7 == 6 { try storage.removeEntries(for: ["s\(number)-\((round + 1) % 30)"]) }
                    }
                }
            }
            try await group.waitForAll()
        }
        // A model of one writer's 150 rounds, the same for both.
        var model: [String: String] = [:]
        for round in 0..<150 {
            model["\(round % 30)"] = "\(round)"
            if round % 7 == 6 { model["\((round + 1) % 30)"] = nil }
        }
        let reopened = try FileEntryStorage(directory: directory)
        for number in 0..<2 {
            for slot in 0..<30 {
                let value = try reopened.entry(for: "s\(number)-\(slot)").map {
                    String(decoding: $0.value, as: UTF8.self)
                }
                #expect(value == model["\(slot)"], "s\(number)-\(slot)")
            }
        }
        #expect(reopened.droppedCount == 0)
    }

    @Test func readersBesideAWriterSeeWholeValues() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try FileEntryStorage(directory: directory)
        let keys = (0..<8).map { "k\($0)" }
        try storage.store(keys.map { entry($0, "0") })
        // Small batches merge files under the readers: a reader must never read a file a merge closed.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 1...300 { try storage.store([entry(keys[round % keys.count], "\(round)")]) }
            }
            for reader in 0..<2 {
                group.addTask {
                    for round in 0..<2_000 {
                        let value = try #require(try storage.entry(for: keys[(round + reader) % keys.count]))
                        #expect(Int(String(decoding: value.value, as: UTF8.self)) != nil)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(storage.droppedCount == 0)
    }

    @Test func aCrashsTemporaryFilesAreRemovedOnOpen() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try FileEntryStorage(directory: directory)
        let leftover = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        try Data("half an entry".utf8).write(to: leftover)
        // And an entry file of the format before log files.
        let old = directory.appendingPathComponent("00c0ffee00c0ffee.entry")
        try Data("RKE1".utf8).write(to: old)
        _ = try FileEntryStorage(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0 != ".lock" } == [])
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
