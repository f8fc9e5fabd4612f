import Foundation
import ResourceKit
import Synchronization

// Writing: one batch as one log file, merged with the small files before it.
extension FileEntryStorage {

    enum Operation {
        case put(String, [UInt8])
        case remove(String)

        var key: String {
            switch self {
            case .put(let key, _), .remove(let key): key
            }
        }
    }

    /// A directory removed while the storage was open (a cache cleared by the system) is made again, empty.
    func reopenIfRemoved() throws(NetworkError) {
        guard access(directory.path, F_OK) != 0 else { return }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .file("cannot make the directory \(directory.path): \(error.localizedDescription)")
        }
        index.withLock { index in
            let (dropped, batch) = (index.dropped, index.nextBatch)
            index = Index()
            index.dropped = dropped
            index.nextBatch = batch
        }
    }

    /// The keys to remove so that the entries, with `adding` stored, fit ``maximumBytes``: the least recently
    /// used first, the batch's own (in order) last, and never the batch's last entry.
    func evictions(in index: Index, adding: [(key: String, bytes: Int)], removing: Set<String> = []) -> Set<String> {
        var total = index.totalBytes
        for key in removing { total -= index.entries[key]?.length ?? 0 }
        for (key, bytes) in adding { total += bytes - (index.entries[key]?.length ?? 0) }
        guard total > maximumBytes, evicts.load(ordering: .relaxed) else { return [] }
        let batch = Set(adding.map(\.key))
        var victims: Set<String> = []
        for (key, location) in index.entries.filter({ !batch.contains($0.key) && !removing.contains($0.key) })
            .sorted(by: { $0.value.used < $1.value.used })
        {
            guard total > maximumBytes else { return victims }
            victims.insert(key)
            total -= location.length
        }
        for (key, bytes) in adding.dropLast() {
            guard total > maximumBytes else { break }
            victims.insert(key)
            total -= bytes
        }
        return victims
    }

    /// Writes `operations` as one new log file, merged with the newest files when they are small (or with all of
    /// them when `mergingAll`, or when replaced records take more bytes than the entries), then syncs the
    /// directory and removes the files it merged.
    func commit(_ operations: [Operation], mergingAll: Bool = false) throws(NetworkError) {
        let batchBytes = operations.reduce(0) { total, operation in
            if case .put(_, let record) = operation { return total + record.count }
            return total + EntryCoding.headerSize + EntryCoding.trailerSize + operation.key.utf8.count
        }
        let plan = index.withLock { index in
            defer { index.nextBatch += 1 }
            var count = 0
            // The bound holds after this batch, not before it: what the entries and the files will take once it is
            // written (a removal of everything leaves no entries, and its files merge away now).
            var entryBytes = index.totalBytes
            var seen: Set<String> = []
            for operation in operations.reversed() where seen.insert(operation.key).inserted {
                entryBytes -= index.entries[operation.key]?.length ?? 0
                if case .put(_, let record) = operation { entryBytes += record.count }
            }
            let fileBytes = index.fileBytes + batchBytes
            if mergingAll || fileBytes - entryBytes > max(entryBytes, 64 << 10) {
                count = index.files.count
            } else {
                var accumulated = batchBytes
                for file in index.files.reversed() {
                    guard file.size <= 2 * accumulated || index.files.count - count > 24 else { break }
                    count += 1
                    accumulated += file.size
                }
            }
            let merged = Array(index.files.suffix(count))
            let fromOldest = count == index.files.count
            let mergedFirsts = Set(merged.map(\.first))
            let copies = index.entries.filter { mergedFirsts.contains($0.value.file.first) }
                .sorted { ($0.value.file.first, $0.value.offset) < ($1.value.file.first, $1.value.offset) }
            let removals = fromOldest ? [] : index.removals.filter { mergedFirsts.contains($0.value) }.map(\.key)
            return (merged, fromOldest, copies, removals, index.nextBatch)
        }
        let (merged, fromOldest, copies, keptRemovals, batch) = plan
        if operations.isEmpty && merged.isEmpty { return }
        let touched = Set(operations.map(\.key))
        let writer = try EntryLogWriter(directory: prefix)
        var moved: [(key: String, from: Location, offset: Int)] = []
        var damaged: [(key: String, from: Location)] = []
        for (key, location) in copies where !touched.contains(key) {
            guard let record = location.file.read(at: location.offset, count: location.length),
                record.withUnsafeBytes({ EntryCoding.check($0).map { $0.kind == .entry && $0.key == key } }) == true
            else {
                damaged.append((key, location))
                continue
            }
            moved.append((key, location, writer.append(record)))
            try writer.flushIfLarge()
        }
        // A damaged record is dropped; a removal in its place keeps an older record of its key from coming back.
        for key in keptRemovals + damaged.map(\.key) where !touched.contains(key) && !fromOldest {
            writer.append(EntryCoding.record(.removal, key: key) ?? [])
        }
        var written: [(operation: Operation, offset: Int)] = []
        for operation in operations {
            switch operation {
            case .put(_, let record):
                written.append((operation, writer.append(record)))
            case .remove(let key):
                // With every older file merged, nothing is left that a removal would have to hide.
                if !fromOldest, let record = EntryCoding.record(.removal, key: key) { writer.append(record) }
                written.append((operation, 0))
            }
            try writer.flushIfLarge()
        }
        let first = merged.first?.first ?? batch
        let size = writer.size
        let descriptor = try writer.finish(as: EntryLogFile.name(first: first, last: batch), in: prefix)
        let file = EntryLogFile(first: first, last: batch, descriptor: descriptor, size: size)
        try syncDirectory(directory.path)
        index.withLock { index in
            index.files.removeLast(merged.count)
            index.files.append(file)
            for copy in moved where copy.from.isAt(index.entries[copy.key]) {
                index.entries[copy.key] = Location(
                    file: file, offset: copy.offset, length: copy.from.length, used: copy.from.used)
            }
            for (key, location) in damaged where location.isAt(index.entries[key]) {
                index.remove(key, in: file)
                index.dropped += 1
            }
            for key in keptRemovals where !touched.contains(key) { index.removals[key] = file.first }
            if fromOldest { index.removals = [:] }
            for (operation, offset) in written {
                switch operation {
                case .put(let key, let record): index.place(key, in: file, at: offset, length: record.count)
                case .remove(let key): fromOldest ? index.forget(key) : index.remove(key, in: file)
                }
            }
        }
        for old in merged { unlink(prefix + old.name) }
    }
}
