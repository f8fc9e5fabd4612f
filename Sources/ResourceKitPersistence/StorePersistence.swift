public import Foundation
public import ResourceKit
import Synchronization

/// Where a `ResourceStore` keeps its values between runs, and the queue that writes them there.
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
        var waiters: [CheckedContinuation<Void, Never>] = []
        var lastError: NetworkError?
        var failedWrites = 0
    }

    private let queue = Locked(Queue())
    /// What a writer waiting out ``writeDelay`` sleeps on; a flush wakes it.
    private let wake = NSCondition()

    /// Creates the persistence of a store.
    /// - Parameters:
    ///   - storage: Where the entries live: a ``FileEntryStorage``, or your own database.
    ///   - writeDelay: How long changes gather before they are written, in real time; 100 ms by default, zero
    ///     (or less) writes at once, and more than 60 s counts as 60 s.
    ///   - now: The wall clock that dates each value, so that its age survives a restart; a test can pass
    ///     its own.
    public convenience init(
        storage: any EntryStorage, writeDelay: Duration = .milliseconds(100),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(storage: storage, outbox: nil, queueing: [], writeDelay: writeDelay, now: now)
    }

    /// Creates the persistence of a store with an offline outbox: see ``Outbox``.
    /// - Parameters:
    ///   - storage: Where the entries live.
    ///   - outbox: Where the changes made while the server is unreachable are kept until they reach it: its own
    ///     storage (a ``FileEntryStorage`` of another directory, which from then on never evicts, whatever
    ///     its `maximumBytes`; your own storage must not evict either).
    ///   - queueWhenOffline: The types whose changes the outbox keeps; a change of any other type fails as it
    ///     would without an outbox, and the kept changes of a type not given are neither shown nor sent.
    ///   - writeDelay: How long changes gather before they are written (see ``init(storage:writeDelay:now:)``).
    ///   - now: The wall clock that dates each value.
    public convenience init(
        storage: any EntryStorage, outbox: any EntryStorage, queueWhenOffline: [OfflineQueueing],
        writeDelay: Duration = .milliseconds(100), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(storage: storage, outbox: outbox, queueing: queueWhenOffline, writeDelay: writeDelay, now: now)
    }

    private init(
        storage: any EntryStorage, outbox: (any EntryStorage)?, queueing: [OfflineQueueing], writeDelay: Duration,
        now: @escaping @Sendable () -> Date
    ) {
        self.storage = storage
        self.outboxStorage = outbox
        self.queueing = queueing
        self.writeDelay = min(max(writeDelay, .zero), .seconds(60))
        self.now = now
    }

    /// Where the outbox keeps its changes, if the store has one.
    public let outboxStorage: (any EntryStorage)?
    /// The types whose changes the outbox keeps.
    let queueing: [OfflineQueueing]

    /// The error of the last background write, if it failed; the entries of a failed batch stay queued and
    /// are written with the next change or ``flush()``. `nil` again once a write succeeds.
    public var lastError: NetworkError? { queue.withLock { $0.lastError } }

    /// Writes what is queued now, and waits until every queued change is stored (or its write failed: see
    /// ``lastError``).
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (done, starts) = queue.withLock { queue -> (Bool, Bool) in
                if queue.pending.isEmpty && !queue.isWriting { return (true, false) }
                queue.waiters.append(continuation)
                // Changes left by a failed batch have no writer: start one.
                guard !queue.isWriting else { return (false, false) }
                queue.isWriting = true
                return (false, true)
            }
            if done { continuation.resume() }
            // A writer waiting out its delay sees the waiter and writes at once.
            wake.lock()
            wake.broadcast()
            wake.unlock()
            if starts { startWriter(after: .zero) }
        }
    }

    /// Bumped by each wipe: resources made before it persist nothing more, so that a logged-out user's
    /// values, still shown by live objects, are not written back.
    let generation = Atomic<UInt64>(0)

    /// Tells Observation that a wipe began, for the package's tests.
    let observation = ObservationPoint()

    /// The number of wipes so far; Observation hears when it moves.
    @usableFromInline var currentGeneration: UInt64 {
        observation.track()
        return generation.load(ordering: .acquiring)
    }

    // MARK: For the store

    /// The entry of `key`: the queued change if there is one, else what the storage holds; `nil` when the
    /// storage fails (a cold start then reads from the network).
    func entry(for key: String) -> PersistedEntry? {
        if let queued = queue.withLock({ $0.pending[key] }) { return queued?() }
        return try? storage.entry(for: key)
    }

    /// Queues the entry `make` makes for `key`; it runs on the writer's task, off the caller's path.
    @usableFromInline func save(_ key: String, _ make: @escaping @Sendable () -> PersistedEntry?) { enqueue(key, make) }

    @usableFromInline func remove(_ key: String) { enqueue(key, nil) }

    /// Forgets every queued change and removes every entry; resources made before persist nothing more.
    func wipe() async throws(NetworkError) {
        // In one section with the batches the writer takes: a batch is of one generation.
        queue.withLock { queue in
            generation.add(1, ordering: .acquiringAndReleasing)
            queue.pending = [:]
        }
        observation.changed()
        await flush()
        // On a thread of its own, as the writer's calls: removing every file blocks on the disk.
        let storage = storage
        let result: Result<Void, NetworkError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                do throws(NetworkError) {
                    try storage.removeAll()
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }

    private func enqueue(_ key: String, _ change: Change) {
        let starts = queue.withLock { queue in
            queue.pending[key] = .some(change)
            guard !queue.isWriting else { return false }
            queue.isWriting = true
            return true
        }
        if starts { startWriter(after: writeDelay) }
    }

    /// Starts the one writer: a thread of its own, which waits `delay` or until a flush, writes what is queued,
    /// and ends. A thread rather than a task or a Dispatch queue: its `fsync`s block for milliseconds at a time
    /// (hundreds of I/O waits a second under load), which must hold no thread of Swift's cooperative pool nor
    /// of Dispatch's, where the app's own work runs.
    private func startWriter(after delay: Duration) {
        Thread.detachNewThread { [self] in drain(firstAfter: delay) }
    }

    /// Writes batches until nothing is queued, one writer at a time, so that two changes of one key land in
    /// order. Each batch waits out ``writeDelay`` after the one before (or after the first change), unless a
    /// flush waits: a value that changes all the time is written once per delay, not once per write's
    /// duration.
    private func drain(firstAfter delay: Duration) {
        var deadline = Date().addingTimeInterval(delay / .seconds(1))
        while true {
            wake.lock()
            while queue.withLock({ $0.waiters.isEmpty }), Date() < deadline { _ = wake.wait(until: deadline) }
            wake.unlock()
            // The callers of `flush()` waiting now are served by this batch: it holds everything they queued.
            let (batch, served, generation): ([String: Change], [CheckedContinuation<Void, Never>], UInt64) =
                queue.withLock { queue in
                    defer {
                        queue.pending = [:]
                        queue.waiters = []
                    }
                    return (queue.pending, queue.waiters, currentGeneration)
                }
            if batch.isEmpty {
                let waiters = queue.withLock { queue -> [CheckedContinuation<Void, Never>]? in
                    guard queue.pending.isEmpty else { return nil }
                    queue.isWriting = false
                    defer { queue.waiters = [] }
                    return queue.waiters
                }
                for waiter in served { waiter.resume() }
                guard let waiters else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            let stores = batch.values.compactMap { $0?() }
            let removals = batch.compactMap { $0.value == nil ? $0.key : nil }
            do throws(NetworkError) {
                // One batch: the values and the removals land together or not at all.
                try storage.store(stores, removing: removals)
                queue.withLock { $0.lastError = nil }
            } catch {
                // Kept for the next batch unless a newer change of the key came meanwhile, or a wipe (a logout)
                // came since the batch was taken; then the writer stops until the next change, so that a full
                // disk does not spin.
                let wiped = currentGeneration != generation
                let waiters = queue.withLock { queue in
                    queue.lastError = error
                    queue.failedWrites += 1
                    for (key, change) in batch where queue.pending[key] == nil && !wiped { queue.pending[key] = change }
                    queue.isWriting = false
                    defer { queue.waiters = [] }
                    return queue.waiters
                }
                for waiter in served + waiters { waiter.resume() }
                return
            }
            for waiter in served { waiter.resume() }
            deadline = Date().addingTimeInterval(writeDelay / .seconds(1))
        }
    }
}

/// How a store's resource of one item persists its value: made when the value is `Codable`.
struct PersistenceHooks<Value: Sendable>: Sendable {
    let key: String
    let schema: Int
    let encode: @Sendable (Value) -> Data?
    let decode: @Sendable (Data) -> Value?

    /// The hooks of item `id` of `Remote`, or `nil` when its value is not `Codable` (it is not persisted).
    init?<Remote: Readable>(_ type: Remote.Type, id: some Sendable) where Remote.Value == Value {
        guard Value.self is any Codable.Type else { return nil }
        // By `Remote` type, not only by item: the validators kept are those of this type's read.
        key = Self.key(PersistenceSettings.name(of: Remote.self), id)
        schema = PersistenceSettings.schema(of: Remote.self)
        encode = { ($0 as? any Encodable).flatMap { try? entryEncoder.encode($0) } }
        decode = { data in
            guard let decodable = Value.self as? any Decodable.Type else { return nil }
            return (try? entryDecoder.decode(decodable, from: data)) as? Value
        }
    }

    /// The key of item `id` of the type named `name`.
    static func key(_ name: String, _ id: some Sendable) -> String { "\(name)/\(id)" }
}

/// The coders of persisted values, made once: a cold start makes thousands of resources, each with its hooks.
let entryEncoder = JSONEncoder()
let entryDecoder = JSONDecoder()
