import Foundation
import ResourceKit

// Reading the directory: every log file into an index, at opening and when another storage wrote.
extension FileEntryStorage {
    /// What ``load()`` reads from the directory.
    struct Loaded {
        var index: Index
        /// Files to remove: temporary files, files a merge or a wipe left behind.
        var leftovers: [String]
        var damaged: Bool
    }

    /// Reads every log file of the directory into an index, and says what is left to clean up.
    func load() throws(NetworkError) -> Loaded {
        // Another storage may merge and remove a file between the listing and its opening: list again.
        for _ in 0..<50 {
            let token = lock.token()
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            } catch {
                throw .file("cannot read the directory \(directory.path): \(error.localizedDescription)")
            }
            var loaded = Loaded(index: Index(), leftovers: [], damaged: false)
            loaded.index.token = token
            var found: [(first: UInt64, last: UInt64)] = []
            for name in names {
                // Temporary files, and entries of the format before log files (one file each).
                if name.hasPrefix(".tmp-") || (name.hasSuffix(".entry") && name.utf8.count == 22) {
                    loaded.leftovers.append(name)
                } else if let range = EntryLogFile.range(ofName: name) {
                    // A batch number no count of writes reaches (2⁶³ and above) is not the storage's own: a
                    // damaged or foreign name, left to remove, whose number would overflow the next batch's.
                    if range.last < UInt64(1) << 63 { found.append(range) } else { loaded.leftovers.append(name) }
                }
            }
            loaded.index.nextBatch = (found.map(\.last).max() ?? 0) + 1
            // A merge that crashed after its file was in place leaves the files it merged: the range of its file
            // contains theirs, and it holds everything they did.
            found.sort { $0.first != $1.first ? $0.first < $1.first : $0.last > $1.last }
            var newest: UInt64 = 0
            var files: [EntryLogFile] = []
            var contained = 0
            for range in found {
                let name = EntryLogFile.name(first: range.first, last: range.last)
                guard range.last > newest else {
                    loaded.leftovers.append(name)
                    contained += 1
                    continue
                }
                newest = range.last
                guard let file = EntryLogFile.open(prefix + name, first: range.first, last: range.last) else {
                    if errno == ENOENT { break }
                    throw .file("cannot open \(prefix + name): \(errorText())")
                }
                files.append(file)
            }
            // A file gone between the listing and its opening: list again.
            guard files.count + contained == found.count else { continue }
            for file in files { read(file, into: &loaded) }
            return loaded
        }
        throw .file("the files of \(directory.path) kept changing while they were read")
    }

    private func read(_ file: EntryLogFile, into loaded: inout Loaded) {
        loaded.index.files.append(file)
        file.scan { found in
            switch found {
            case .record(.entry, let key, let offset, let length):
                loaded.index.place(key, in: file, at: offset, length: length)
            case .record(.removal, let key, _, _):
                loaded.index.remove(key, in: file)
            case .record(.wipe, _, _, _):
                // A wipe that crashed before it removed the files before it: they are left to remove.
                loaded.leftovers += loaded.index.files.dropLast().map(\.name)
                let (token, batch) = (loaded.index.token, loaded.index.nextBatch)
                loaded.index = Index()
                loaded.index.files = [file]
                loaded.index.token = token
                loaded.index.nextBatch = batch
            case .damaged(let key):
                if let key { loaded.index.remove(key, in: file) }
                loaded.index.dropped += 1
                loaded.damaged = true
            }
        }
    }

    /// Reads the files again when another storage changed them since this one last looked.
    func refreshIfChanged() throws(NetworkError) {
        guard lock.token() != index.withLock({ $0.token }) else { return }
        writing.lock()
        defer { writing.unlock() }
        guard lock.token() != index.withLock({ $0.token }) else { return }
        try reload()
    }

    /// Replaces the index with what the files hold, keeping this storage's count of dropped records (damage
    /// another storage found is not counted again). Holding the directory's lock (`cleaning`), it also removes
    /// what a crash of another storage left: files a merge or a wipe had not removed yet must go before a
    /// merge drops the records (a wipe's) that hide them.
    func reload(cleaning: Bool = false) throws(NetworkError) {
        let loaded = try load()
        if cleaning, !loaded.leftovers.isEmpty {
            for name in loaded.leftovers { unlink(prefix + name) }
            try syncDirectory(directory.path)
        }
        index.withLock { index in
            let dropped = index.dropped
            index = loaded.index
            index.dropped = dropped
        }
    }
}
