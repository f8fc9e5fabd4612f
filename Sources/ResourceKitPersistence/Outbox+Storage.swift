import Foundation
import ResourceKit

/// The outbox's calls to its storage, one at a time on its own queue, and the news of its list.
extension Outbox {
    /// Forgets every kept change, in memory and on disk, rolling each back in every holder (a logout). The
    /// storage is emptied, not only of its changes: a removal leaves the removed record's bytes in a log until it
    /// is merged, and a logout must leave none of the user's data behind.
    func wipe() async throws(NetworkError) {
        let ids = state.withLock { state -> [String] in
            defer { state.records = [] }
            return state.records.map(\.id)
        }
        for id in ids { unshow(id) }
        notify()
        try await perform { storage throws(NetworkError) in try storage.removeAll() }
    }

    /// Writes a record to the storage (a new one, or one rewritten: its base, its conflict, its value).
    func save(_ record: OutboxRecord) async throws(NetworkError) {
        guard let encoded = try? JSONEncoder().encode(record) else {
            throw .invalidRequest("the change \(record.id) does not encode")
        }
        try await perform { storage throws(NetworkError) in
            try storage.store([PersistedEntry(key: record.storageKey, value: encoded, loadedAt: record.queuedAt)])
        }
    }

    func notify() {
        state.withLock { state in
            // Made only for a reader: a list of every kept change.
            state.watchers.yield(state.records.map(\.change))
        }
        observation.changed()
    }

    /// Runs a storage call on the outbox's queue, off the cooperative pool, and waits for it.
    func perform(_ call: @escaping @Sendable (any EntryStorage) throws(NetworkError) -> Void)
        async throws(NetworkError)
    {
        let storage = storage
        let result: Result<Void, NetworkError> = await withCheckedContinuation { continuation in
            io.async {
                do throws(NetworkError) {
                    try call(storage)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }
}
