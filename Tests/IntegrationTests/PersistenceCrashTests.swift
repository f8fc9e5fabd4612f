import Foundation
import ResourceKit
import Testing

@testable import ResourceKitPersistence

/// A FileEntryStorage written by a real process that is killed with SIGKILL at random moments.
///
/// Run on its own (`Scripts/test` does, with `RESOURCEKIT_CRASH_TESTS=1`): 200 processes that `fsync` as fast
/// as they can load the disk and the scheduler enough to slow the timing-sensitive tests beside them.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(
        if: ProcessInfo.processInfo.environment["RESOURCEKIT_CRASH_TESTS"] == "1",
        "run on its own by Scripts/test: RESOURCEKIT_CRASH_TESTS=1 swift test --filter PersistenceCrashTests"))
struct PersistenceCrashTests {
    /// Runs the child with `arguments`, kills it with `SIGKILL` at a random moment, and returns what it printed:
    /// in even rounds once its first line is out (into its writes), in odd ones from the start (often before it
    /// has opened its storage).
    private static func runUntilKilled(_ arguments: [String], _ round: Int, _ rng: inout SplitMix) throws -> Data {
        let process = ChildProcess.make(arguments)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var received = Data()
        if round.isMultiple(of: 2) {
            while !received.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                received += chunk
            }
        }
        usleep(useconds_t(rng.next() % 30_000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "round \(round): the child ended by itself")
        return received + output.fileHandleForReading.readDataToEndOfFile()
    }

    @Test func killedAtRandomMomentsEveryEntryIsOldOrNewAndEveryAcknowledgedOneStays() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["RESOURCEKIT_CRASH_ROUNDS"] ?? "") ?? 200
        let seed =
            UInt64(ProcessInfo.processInfo.environment["RESOURCEKIT_SEED"] ?? "") ?? UInt64.random(in: 1..<(1 << 40))
        var rng = SplitMix(state: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = ChildProcess.executable.path
        #expect(FileManager.default.isExecutableFile(atPath: executable), "no test binary at \(executable)")
        /// The newest acknowledged generation of each key.
        var acknowledged: [Int: Int] = [:]
        var totalAcks = 0
        var roundsWithWrites = 0
        var corrupted = 0
        for round in 0..<rounds {
            let received = try Self.runUntilKilled([directory.path, String(rng.next() % 1_000_000)], round, &rng)
            if received.count > 0 { roundsWithWrites += 1 }
            let text = String(decoding: received, as: UTF8.self)
            // Only whole lines count: the last may have been cut by the kill.
            for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                let fields = line.split(separator: " ")
                guard fields.first == "ack", fields.count >= 3, let generation = Int(fields[1]) else {
                    Issue.record("round \(round): a garbled line \(line)")
                    continue
                }
                totalAcks += 1
                for key in fields.dropFirst(2).compactMap({ Int($0) }) { acknowledged[key] = generation }
            }
            let storage = try FileEntryStorage(directory: directory, maximumBytes: 1 << 30)
            for key in 0..<16 {
                let entry = try storage.entry(for: "item-\(key)")
                if let floor = acknowledged[key] {
                    guard let entry else {
                        Issue.record("seed \(seed), round \(round): item-\(key), acknowledged at \(floor), is gone")
                        continue
                    }
                    let generation = ChildProcess.generation(of: entry.value)
                    #expect(generation >= floor, "seed \(seed), round \(round): item-\(key) went back")
                    #expect(
                        entry.value == ChildProcess.payload(key: key, generation: generation),
                        "seed \(seed), round \(round): item-\(key) is torn")
                } else if let entry {
                    // Written but not acknowledged before the kill: it must still be whole.
                    let generation = ChildProcess.generation(of: entry.value)
                    #expect(
                        entry.value == ChildProcess.payload(key: key, generation: generation),
                        "seed \(seed), round \(round): item-\(key) is torn")
                }
            }
            #expect(storage.droppedCount == 0, "seed \(seed), round \(round): a file failed its checks")
            // Now and then, damage a record as a disk might: the check must drop it, never return it.
            if round % 10 == 9, let key = acknowledged.keys.sorted().first(where: { _ in rng.next() % 2 == 0 }),
                let record = storage.location(ofKey: "item-\(key)")
            {
                var before: [Int: (value: Data, offset: Int, path: String)] = [:]
                for other in 0..<16 {
                    guard let entry = try storage.entry(for: "item-\(other)"),
                        let location = storage.location(ofKey: "item-\(other)")
                    else { continue }
                    before[other] = (entry.value, location.offset, location.path)
                }
                let file = URL(fileURLWithPath: record.path)
                var bytes = try Data(contentsOf: file)
                // The key's header ends 24 bytes and the key after the record's start; its value follows.
                let valueStart = record.offset + 24 + "item-\(key)".utf8.count
                let mode = rng.next() % 3
                switch mode {
                case 0:  // a bit of the value or its checksum: the record names its key, which is dropped
                    let position =
                        valueStart + Int(clamping: rng.next() % UInt64(record.offset + record.length - valueStart))
                    bytes[position] ^= UInt8(1 << (rng.next() % 8))
                case 1:  // a bit of the header or key: the record's key is unknown, an older record may remain
                    let position = record.offset + Int(clamping: rng.next() % UInt64(valueStart - record.offset))
                    bytes[position] ^= UInt8(1 << (rng.next() % 8))
                default:  // the file cut inside the value: it and every record after it are gone
                    bytes = bytes.prefix(
                        valueStart + Int(clamping: rng.next() % UInt64(record.offset + record.length - valueStart)))
                }
                try bytes.write(to: file)
                let reopened = try FileEntryStorage(directory: directory, maximumBytes: 1 << 30)
                #expect(reopened.droppedCount == 1, "seed \(seed), round \(round), damage \(mode)")
                for (other, old) in before {
                    let entry = try reopened.entry(for: "item-\(other)")
                    let lost = other == key || (mode == 2 && old.path == record.path && old.offset > record.offset)
                    guard lost else {
                        #expect(entry?.value == old.value, "seed \(seed), round \(round): item-\(other) changed")
                        continue
                    }
                    if mode == 0 || (mode == 2 && other == key) {
                        #expect(entry == nil, "seed \(seed), round \(round): a damaged record was returned")
                    } else if let entry {
                        // Only an older record, whole, can stand where the damage hides which key it held.
                        let generation = ChildProcess.generation(of: entry.value)
                        let newer = ChildProcess.generation(of: old.value)
                        #expect(
                            generation < newer
                                && entry.value == ChildProcess.payload(key: other, generation: generation))
                    }
                    acknowledged[other] = nil
                }
                corrupted += 1
            }
        }
        // The kills landed at moments with writes behind them: at least in the rounds that waited for one.
        #expect(roundsWithWrites >= rounds / 2)
        #expect(totalAcks >= rounds / 2)
        #expect(corrupted > 0)
    }

    @Test func killedAtRandomMomentsTheOutboxKeepsEveryAcknowledgedChangeInOrderOnceWithItsBase() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["RESOURCEKIT_CRASH_ROUNDS"] ?? "") ?? 200
        let seed =
            UInt64(ProcessInfo.processInfo.environment["RESOURCEKIT_SEED"] ?? "") ?? UInt64.random(in: 1..<(1 << 40))
        var rng = SplitMix(state: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        /// Every change the child said it kept, in the order it said so.
        var acknowledged: [String] = []
        /// How many held changes the rounds found, all told.
        var heldSeen = 0
        for round in 0..<rounds {
            let received = try Self.runUntilKilled(
                [directory.path, String(rng.next() % 1_000_000), "outbox"], round, &rng)
            for line in String(decoding: received, as: UTF8.self).split(
                separator: "\n", omittingEmptySubsequences: false
            )
            .dropLast() {
                let fields = line.split(separator: " ")
                guard fields.count == 2, fields[0] == "queued" else {
                    Issue.record("round \(round): a garbled line \(line)")
                    continue
                }
                acknowledged.append(String(fields[1]))
            }
            // What the next launch finds: every acknowledged change, once, in the order acknowledged (changes
            // stored but killed before they were acknowledged may be there too), and no damaged file.
            let storage = try FileEntryStorage(
                directory: directory.appendingPathComponent("outbox"), maximumBytes: .max)
            let store = ResourceStore(
                session: NetworkSession(baseURL: "http://127.0.0.1:9"),
                persistence: StorePersistence(
                    storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                    outbox: storage, queueWhenOffline: []))
            let pending = try #require(store.outbox).pending
            let ids = pending.map(\.id)
            #expect(Set(ids).count == ids.count, "seed \(seed), round \(round): a change is there twice")
            #expect(
                zip(pending, pending.dropFirst()).allSatisfy { $0.sequence < $1.sequence },
                "seed \(seed), round \(round): out of order")
            let kept = Set(acknowledged)
            let missing = acknowledged.filter { !ids.contains($0) }
            #expect(missing.isEmpty, "seed \(seed), round \(round): acknowledged changes lost: \(missing)")
            #expect(ids.filter { kept.contains($0) } == acknowledged, "seed \(seed), round \(round): order changed")
            #expect(storage.droppedCount == 0, "seed \(seed), round \(round): a file failed its checks")
            // Every change keeps the base it was made on: the read's validators.
            let baseless = pending.filter {
                $0.base?.entityTag != ChildProcess.ReadsOnly.entityTag(of: $0.itemID)
                    || $0.base?.lastModified != "Tue, 01 Dec 2026 00:00:00 GMT"
            }
            #expect(baseless.isEmpty, "seed \(seed), round \(round): changes without their base: \(baseless)")
            // A change held in a conflict is still held, with the three values.
            let held = try #require(store.outbox).held
            heldSeen += held.count
            #expect(held.map(\.id) == pending.filter(\.isHeld).map(\.id))
            for conflict in held {
                #expect(
                    conflict.theirs(as: ChildProcess.Note.self)?.text == "theirs"
                        && conflict.base(as: ChildProcess.Note.self)?.text == "server"
                        && conflict.mine(as: ChildProcess.Note.self).map { !["theirs", "server"].contains($0.text) }
                            == true,
                    "seed \(seed), round \(round): \(conflict)")
            }
            #expect(store.outbox?.lastError == nil)
        }
        #expect(acknowledged.count >= rounds / 2)
        #expect(heldSeen > 0, "no round held a conflict: the test did not reach what it checks")
    }
}

private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
