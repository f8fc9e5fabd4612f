public import Foundation

/// Where a ``ResourceStore`` keeps its values between runs, and the queue that writes them there.
///
/// ```swift
/// let directory = applicationSupport.appendingPathComponent("store/\(userID)")  // one per user
/// let persistence = StorePersistence(storage: try FileEntryStorage(directory: directory))
/// let store = ResourceStore(session: session, persistence: persistence)
/// ```
///
/// Writes are batched off the caller's path: a value a resource shows is queued, and a background task
/// writes what is queued, newest per item, in one batch, ``writeDelay`` after the first change (so that a
/// value that changes often is written once per delay). ``flush()`` writes at once and waits until everything
/// queued is stored (call it before the app is suspended, or in a test). A value queued and not yet written
/// is what a new resource starts from, as if it were on disk.
public final class StorePersistence: Sendable {
    /// Where the entries live.
    public let storage: any EntryStorage
    /// How long changes gather before they are written.
    public let writeDelay: Duration
    let now: @Sendable () -> Date

    /// A queued change of one key: an entry to store, made (encoded) by the writer, or a removal.
    typealias Change = (@Sendable () -> PersistedEntry?)?

    private struct Queue {
        /// The newest change per key.
        var pending: [String: Change] = [:]
        var isWriting = false
        /// The writer, while it waits out ``writeDelay``: a flush cancels its wait.
        var writer: Task<Void, Never>?
        var waiters: [CheckedContinuation<Void, Never>] = []
        var lastError: NetworkError?
        var failedWrites = 0
    }

    private let queue = Locked(Queue())

    /// Creates the persistence of a store.
    /// - Parameters:
    ///   - storage: Where the entries live: a ``FileEntryStorage``, or your own database.
    ///   - writeDelay: How long changes gather before they are written; 100 ms by default, zero (or less)
    ///     writes at once.
    ///   - now: The wall clock that dates each value, so that its age survives a restart; a test can pass
    ///     its own.
    public init(
        storage: any EntryStorage, writeDelay: Duration = .milliseconds(100),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.storage = storage
        self.writeDelay = min(max(writeDelay, .zero), .seconds(60))
        self.now = now
    }

    /// The last error of a background write, if any; the entries of a failed batch stay queued and are
    /// written with the next one.
    public var lastError: NetworkError? { queue.withLock { $0.lastError } }

    /// Writes what is queued now, and waits until every queued change is stored (or its write failed: see
    /// ``lastError``).
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (done, writer) = queue.withLock { queue -> (Bool, Task<Void, Never>?) in
                if queue.pending.isEmpty && !queue.isWriting { return (true, nil) }
                queue.waiters.append(continuation)
                return (false, queue.writer)
            }
            if done { continuation.resume() }
            writer?.cancel()
        }
    }

    // MARK: For the store

    /// The entry of `key`: the queued change if there is one, else what the storage holds; `nil` when the
    /// storage fails (a cold start then reads from the network).
    func entry(for key: String) -> PersistedEntry? {
        if let queued = queue.withLock({ $0.pending[key] }) { return queued?() }
        return try? storage.entry(for: key)
    }

    /// Queues the entry `make` makes for `key`; it runs on the writer's task, off the caller's path.
    func save(_ key: String, _ make: @escaping @Sendable () -> PersistedEntry?) { enqueue(key, make) }

    func remove(_ key: String) { enqueue(key, nil) }

    /// Forgets every queued change and removes every entry.
    func wipe() async throws(NetworkError) {
        queue.withLock { $0.pending = [:] }
        await flush()
        try storage.removeAll()
    }

    private func enqueue(_ key: String, _ change: Change) {
        let starts = queue.withLock { queue in
            queue.pending[key] = .some(change)
            guard !queue.isWriting else { return false }
            queue.isWriting = true
            return true
        }
        guard starts else { return }
        let delay = writeDelay
        let writer = Task.detached(priority: .utility) { [self] in
            if delay > .zero { try? await Task.sleep(for: delay) }
            drain()
        }
        queue.withLock { queue in
            queue.writer = writer
            // A flush that came before the writer was recorded did not cancel it: do it now.
            if !queue.waiters.isEmpty { writer.cancel() }
        }
    }

    /// Writes batches until nothing is queued, one writer at a time, so that two changes of one key land in
    /// order.
    private func drain() {
        queue.withLock { $0.writer = nil }
        while true {
            let batch: [String: Change] = queue.withLock { queue in
                defer { queue.pending = [:] }
                return queue.pending
            }
            if batch.isEmpty {
                let waiters = queue.withLock { queue -> [CheckedContinuation<Void, Never>]? in
                    guard queue.pending.isEmpty else { return nil }
                    queue.isWriting = false
                    defer { queue.waiters = [] }
                    return queue.waiters
                }
                guard let waiters else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            let stores = batch.values.compactMap { $0?() }
            let removals = batch.compactMap { $0.value == nil ? $0.key : nil }
            do throws(NetworkError) {
                try storage.store(stores)
                try storage.removeEntries(for: removals)
            } catch {
                // Kept for the next batch unless a newer change of the key came meanwhile; then the writer
                // stops until the next change, so that a full disk does not spin.
                let waiters = queue.withLock { queue in
                    queue.lastError = error
                    queue.failedWrites += 1
                    for (key, change) in batch where queue.pending[key] == nil { queue.pending[key] = change }
                    queue.isWriting = false
                    defer { queue.waiters = [] }
                    return queue.waiters
                }
                for waiter in waiters { waiter.resume() }
                return
            }
        }
    }
}

/// How a store's resource of one `Remote` type persists its value; made where `Value` is `Codable`.
@usableFromInline struct PersistenceHooks<Value: Sendable>: Sendable {
    let key: String
    let schema: Int
    let encode: @Sendable (Value) -> Data?
    let decode: @Sendable (Data) -> Value?

    @usableFromInline init<Remote: Readable>(_ type: Remote.Type, id: some Sendable)
    where Remote.Value == Value, Value: Codable {
        // By `Remote` type, not only by item: the validators kept are those of this type's read.
        key = "\(String(reflecting: Remote.self))/\(id)"
        schema = Remote.persistenceSchema
        encode = { try? JSONEncoder().encode($0) }
        decode = { try? JSONDecoder().decode(Value.self, from: $0) }
    }
}
