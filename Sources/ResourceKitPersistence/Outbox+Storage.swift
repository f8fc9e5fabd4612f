import Foundation
import ResourceKit

/// The outbox's calls to its storage, one at a time on its own queue, and the news of its list.
extension Outbox {
    /// Forgets every kept change, in memory and on disk, rolling each back in every holder (a logout). The
    /// storage is emptied, not only of its changes: a removal leaves the removed record's bytes in a log until it
    /// is merged, and a logout must leave none of the user's data behind.
    ///
    /// A replay running is stopped first, and what it wrote meanwhile goes with the rest: nothing of the wiped
    /// changes (a held conflict, a rebase, a landed item's base) is written after the storage is emptied. A
    /// change being kept or resolved as the wipe starts is not written either.
    func wipe() async throws(NetworkError) {
        let (ids, replay) = state.withLock { state -> ([String], Task<Void, Never>?) in
            defer {
                state.wipes &+= 1
                state.records = []
                state.resumed = []
            }
            return (state.records.map(\.id), state.lastReplay)
        }
        replay?.cancel()
        await replay?.value
        state.withLock { state in
            state.records = []
            state.landed = [:]
            state.holdErrors = [:]
        }
        for id in ids { unshow(id) }
        notify()
        try await perform { storage throws(NetworkError) in try storage.removeAll() }
    }

    /// Writes a record to the storage (one rewritten: its base, its conflict, its value), unless it is no longer
    /// kept (a wipe, or its landing, came first).
    func save(_ record: OutboxRecord) async throws(NetworkError) {
        try await write(record) { state in state.records.contains { $0.id == record.id } }
    }

    /// Writes a new record to the storage, unless the outbox was wiped since `wipes` was read.
    func save(new record: OutboxRecord, unlessWipedSince wipes: UInt64) async throws(NetworkError) {
        try await write(record) { state in state.wipes == wipes }
    }

    private func write(_ record: OutboxRecord, if stillWanted: @escaping @Sendable (State) -> Bool)
        async throws(NetworkError)
    {
        guard let encoded = try? JSONEncoder().encode(record) else {
            throw .invalidRequest("the change \(record.id) does not encode")
        }
        try await perform { [state] storage throws(NetworkError) in
            // On the storage's queue, as the wipe's removal is: decided in the order the writes run.
            guard state.withLock({ stillWanted($0) }) else { return }
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
