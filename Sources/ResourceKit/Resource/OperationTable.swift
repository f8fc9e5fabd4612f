/// Book-keeping for the operations of one resource: who waits for what, which reads are shared, and the
/// order of serial operations. It lives inside the owner's lock, next to the state it changes.
struct OperationTable<Outcome: Sendable, Context: Sendable> {
    typealias Waiter = CheckedContinuation<Result<Outcome, NetworkError>, Never>

    struct Entry {
        var waiters: [UInt64: Waiter] = [:]
        var task: Task<Void, Never>?
        /// Set when the operation begins; decides whether its result may still change the state.
        var generation: UInt64?
        var sharingKey: String?
        /// Owner-defined context, such as which page to load; `begin` may fill it in.
        var context: Context
    }

    var entries: [UInt64: Entry] = [:]
    var shared: [String: UInt64] = [:]
    var waiterEntry: [UInt64: UInt64] = [:]
    /// Waiters that have an id but are not registered yet; cancelling one removes it from here.
    var pendingWaiters: Set<UInt64> = []
    var lastSerial: Task<Void, Never>?
    /// The generation of the newest operation that began.
    var generation: UInt64 = 0
    private var nextID: UInt64 = 0

    mutating func makeID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    mutating func makeWaiter() -> UInt64 {
        let id = makeID()
        pendingWaiters.insert(id)
        return id
    }

    mutating func nextGeneration() -> UInt64 {
        generation &+= 1
        return generation
    }

    /// Removes an operation and everything that points at it.
    mutating func remove(_ id: UInt64) -> Entry? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        if let key = entry.sharingKey, shared[key] == id { shared.removeValue(forKey: key) }
        for waiter in entry.waiters.keys { waiterEntry.removeValue(forKey: waiter) }
        return entry
    }

    /// The generation of the newest operation still in flight, if any.
    func newestGenerationInFlight(where include: (Entry) -> Bool = { _ in true }) -> UInt64? {
        entries.values.lazy.filter(include).compactMap(\.generation).max()
    }
}

/// State that carries an operation table.
protocol OperationStorage {
    associatedtype Outcome: Sendable
    associatedtype Context: Sendable
    var operations: OperationTable<Outcome, Context> { get set }
}

/// An object whose operations are shared, ordered and cancelled through an ``OperationTable``.
///
/// The host decides what beginning, joining and finishing an operation does to its state; this
/// extension does the waiting, sharing and cancellation, the same way for every host.
protocol OperationHost: AnyObject, Sendable {
    associatedtype Storage: OperationStorage
    typealias Outcome = Storage.Outcome
    typealias Context = Storage.Context
    typealias Table = OperationTable<Outcome, Context>
    typealias Entry = Table.Entry

    /// Runs `body` under the lock, then tells Observation if the observed state changed.
    func withStorage<R>(_ body: (inout Storage) -> R) -> R
    /// The operation begins: give it a generation and show that it is loading. Return `false` to skip it.
    static func begin(_ entry: inout Entry, in storage: inout Storage) -> Bool
    /// Another caller joins a shared operation.
    static func join(_ entry: inout Entry, in storage: inout Storage)
    /// The operation finished, or every caller left it (then `result` is `.cancelled`).
    static func finish(_ entry: Entry, with result: Result<Outcome, NetworkError>, in storage: inout Storage)
}

extension OperationHost {
    /// Runs `work` as an operation and waits for its outcome.
    ///
    /// - Callers with the same `sharingKey` share one run of `work`.
    /// - `serial` operations begin one after another in call order.
    /// - A cancelled caller returns `.cancelled` at once; when the last caller of an operation leaves, its
    ///   task is cancelled (which cancels the HTTP request) and the host's `finish` restores its state.
    func perform(
        sharingKey: String? = nil,
        serial: Bool = false,
        context: Context,
        work: @escaping @Sendable (Context) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> Outcome {
        if Task.isCancelled { throw .cancelled }
        let waiter = withStorage { $0.operations.makeWaiter() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Table.Waiter) in
                let registered = withStorage { storage in
                    register(
                        waiter, continuation, sharingKey: sharingKey, serial: serial, context: context, work: work,
                        in: &storage)
                }
                if !registered { continuation.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            cancelWaiter(waiter)
        }
        return try result.get()
    }

    private func register(
        _ waiter: UInt64,
        _ continuation: Table.Waiter,
        sharingKey: String?,
        serial: Bool,
        context: Context,
        work: @escaping @Sendable (Context) async throws(NetworkError) -> Outcome,
        in storage: inout Storage
    ) -> Bool {
        guard storage.operations.pendingWaiters.remove(waiter) != nil else { return false }
        if let key = sharingKey, let id = storage.operations.shared[key],
            var entry = storage.operations.entries[id]
        {
            entry.waiters[waiter] = continuation
            Self.join(&entry, in: &storage)
            storage.operations.entries[id] = entry
            storage.operations.waiterEntry[waiter] = id
            return true
        }
        let id = storage.operations.makeID()
        var entry = Entry(sharingKey: sharingKey, context: context)
        entry.waiters[waiter] = continuation
        if !serial, !Self.begin(&entry, in: &storage) {
            return false
        }
        let predecessor = serial ? storage.operations.lastSerial : nil
        let begunContext = entry.context
        let task = Task {
            var context = begunContext
            if serial {
                await predecessor?.value
                guard let serialContext = beginSerial(id) else { return }
                context = serialContext
            }
            let result: Result<Outcome, NetworkError>
            do throws(NetworkError) {
                result = .success(try await work(context))
            } catch {
                result = .failure(error)
            }
            complete(id, with: result)
        }
        entry.task = task
        if serial { storage.operations.lastSerial = task }
        storage.operations.entries[id] = entry
        storage.operations.waiterEntry[waiter] = id
        if let sharingKey { storage.operations.shared[sharingKey] = id }
        return true
    }

    private func beginSerial(_ id: UInt64) -> Context? {
        let outcome: (began: Context?, waiters: [Table.Waiter]) = withStorage { storage in
            guard var entry = storage.operations.entries[id] else { return (nil, []) }
            if Self.begin(&entry, in: &storage) {
                storage.operations.entries[id] = entry
                return (entry.context, [])
            }
            let removed = storage.operations.remove(id)
            return (nil, removed.map { Array($0.waiters.values) } ?? [])
        }
        for waiter in outcome.waiters { waiter.resume(returning: .failure(.cancelled)) }
        return outcome.began
    }

    private func complete(_ id: UInt64, with result: Result<Outcome, NetworkError>) {
        let waiters: [Table.Waiter] = withStorage { storage in
            guard let entry = storage.operations.remove(id) else { return [] }
            Self.finish(entry, with: result, in: &storage)
            return Array(entry.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    private func cancelWaiter(_ waiter: UInt64) {
        let outcome: (waiter: Table.Waiter?, task: Task<Void, Never>?) = withStorage { storage in
            if storage.operations.pendingWaiters.remove(waiter) != nil { return (nil, nil) }
            guard let id = storage.operations.waiterEntry.removeValue(forKey: waiter),
                var entry = storage.operations.entries[id],
                let continuation = entry.waiters.removeValue(forKey: waiter)
            else { return (nil, nil) }
            guard entry.waiters.isEmpty else {
                storage.operations.entries[id] = entry
                return (continuation, nil)
            }
            _ = storage.operations.remove(id)
            Self.finish(entry, with: .failure(.cancelled), in: &storage)
            return (continuation, entry.task)
        }
        outcome.waiter?.resume(returning: .failure(.cancelled))
        outcome.task?.cancel()
    }
}
