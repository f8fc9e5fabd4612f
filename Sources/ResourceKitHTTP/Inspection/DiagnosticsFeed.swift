public import Synchronization

/// Where a session's diagnostic events go: to the session's logger, at the levels it asks for, and to every
/// listener; nowhere, at the cost of one atomic load, while no one listens and the logger asks for none.
///
/// Every listener's unread records live here, under one lock: recording an event takes that lock once,
/// whatever the number of listeners. A consumer takes its records in batches: a waiting consumer is woken
/// ``flushDelay`` after the first record it has not seen, with everything that came meanwhile, so a burst
/// costs it one wake-up and the thread that emits never wakes another.
@usableFromInline package final class DiagnosticsFeed: Sendable {
    private struct Listener {
        let id: UInt64
        let limit: Int
        var pending = DiagnosticBatch()
        /// The record array the consumer gave back, emptied, to collect the next batch in without allocating.
        var spare: [DiagnosticRecord] = []
        var waiter: CheckedContinuation<DiagnosticBatch?, Never>? {
            didSet { isWaiting = waiter != nil }
        }
        /// Whether `waiter` is set, read by every event: reading the optional itself copies it, a retain.
        var isWaiting = false
        var isFlushScheduled = false

        /// Appends; whether a flush must be scheduled for a waiting consumer.
        mutating func append(
            _ record: DiagnosticRecord, holding subject: DiagnosticSubject?, _ error: DiagnosticErrorBox?
        ) -> Bool {
            // Past twice the limit, the oldest go at once: dropping one per event would move them all each time.
            if pending.records.count >= 2 * limit { pending.dropOldest(pending.records.count - limit + 1) }
            pending.append(record, holding: subject, error)
            guard isWaiting, !isFlushScheduled else { return false }
            isFlushScheduled = true
            return true
        }

        /// The newest `limit` pending records; the spare array collects the next ones.
        mutating func takePending() -> DiagnosticBatch {
            var batch = DiagnosticBatch(records: spare)
            spare = []
            swap(&batch, &pending)
            if batch.records.count > limit { batch.dropOldest(batch.records.count - limit) }
            return batch
        }
    }

    private struct State {
        var listeners: [Listener] = []
        var nextID: UInt64 = 0
    }

    /// How long a waiting consumer's first event waits for company: long enough that a busy session wakes
    /// its consumer about a hundred times a second, short enough that a person watching sees no delay.
    static let flushDelay = Duration.milliseconds(10)
    /// The most unread events a listener keeps: a larger limit (`Int.max` for "all") is this one, so that no
    /// count of them can overflow.
    static let largestLimit = 1 << 30
    /// One timer for every feed of the process, on the real clock: a session's `ManualClock` must not hold
    /// events back.
    private static let flusher = DeadlineScheduler(timeline: Timeline(ContinuousClock()))
    private static let now = Timeline(ContinuousClock())

    @usableFromInline let listenerCount = Atomic<Int>(0)
    private let state = Locked(State())
    /// The session's logger: it receives each event as it is emitted, on the emitting thread.
    private let logger: (any NetworkLogging)?
    /// The logger's minimum level; `Int.max` without one.
    @usableFromInline let loggedLevel: Int

    @usableFromInline init(logger: (any NetworkLogging)? = nil) {
        self.logger = logger
        loggedLevel = logger?.minimumLevel.rawValue ?? .max
    }

    /// Whether anyone takes the events of `level`: every emitting site checks this before it builds one.
    @inlinable func wants(_ level: LogLevel) -> Bool {
        level.rawValue >= loggedLevel || listenerCount.load(ordering: .relaxed) > 0
    }

    /// Whether anyone takes debug events (most kinds): a listener, or a logger at ``LogLevel/debug``.
    @inlinable package var isActive: Bool { wants(.debug) }

    /// Hands the record to every listener. Appended under the lock, so every listener sees events in the
    /// order the library emitted them, from whatever thread.
    /// - Parameters:
    ///   - record: The event.
    ///   - subject: What it is about; the listeners hold it for the record.
    ///   - error: The event's error, redacted; the listeners hold it for the record.
    @usableFromInline package func emit(
        _ record: DiagnosticRecord, about subject: DiagnosticSubject?, error: NetworkError? = nil
    ) {
        var record = record
        record.subjectReference = subject.map(Unmanaged.passUnretained)
        let box = error.map(DiagnosticErrorBox.init)
        record.errorReference = box.map(Unmanaged.passUnretained)
        let level = record.kind.level
        // Built while `subject` and `box` hold what the record names.
        if level.rawValue >= loggedLevel, let logger { logger.log(level, DiagnosticEvent(record)) }
        append(record, subject, box)
    }

    /// As `emit`, for an event emitted under an object's lock (a state change, which must follow the object's
    /// transitions in order): the listeners get it now, and the record is returned when a logger takes it, for
    /// ``log(_:)`` after the lock. A logger may read the object; under its lock it would wait for itself.
    ///
    /// The record, not its event: 48 bytes that the object's transition carries past its lock, where an event
    /// is several hundred, copied on every transition whether or not anyone logs.
    @usableFromInline package func emitUnderLock(
        _ record: DiagnosticRecord, about subject: DiagnosticSubject
    ) -> DiagnosticRecord? {
        var record = record
        record.subjectReference = Unmanaged.passUnretained(subject)
        append(record, subject, nil)
        return record.kind.level.rawValue >= loggedLevel && logger != nil ? record : nil
    }

    /// Hands the logger the event of a record ``emitUnderLock(_:about:)`` returned; the record's subject is
    /// still alive (the object that emitted it holds it).
    @usableFromInline package func log(_ record: DiagnosticRecord) {
        logger?.log(record.kind.level, DiagnosticEvent(record))
    }

    private func append(_ record: DiagnosticRecord, _ subject: DiagnosticSubject?, _ box: DiagnosticErrorBox?) {
        guard listenerCount.load(ordering: .relaxed) > 0 else { return }
        let flushes = state.withLock { state -> [UInt64]? in
            // Optional, so that an event that wakes nobody touches no array.
            var flushes: [UInt64]?
            // A record is bytes: each listener gets a copy.
            for index in state.listeners.indices where state.listeners[index].append(record, holding: subject, box) {
                if flushes == nil { flushes = [] }
                flushes?.append(state.listeners[index].id)
            }
            return flushes
        }
        if let flushes { scheduleFlushes(flushes) }
    }

    private func scheduleFlushes(_ ids: [UInt64]) {
        for id in ids {
            _ = Self.flusher.schedule(at: Self.now.now + Self.flushDelay, DiagnosticFlush(feed: self, id: id))
        }
    }

    /// A new listener, keeping at most `limit` unread events.
    func events(bufferingNewest limit: Int) -> DiagnosticReader {
        let id = state.withLock { state in
            state.nextID &+= 1
            state.listeners.append(Listener(id: state.nextID, limit: min(max(1, limit), Self.largestLimit)))
            return state.nextID
        }
        listenerCount.add(1, ordering: .relaxed)
        return DiagnosticReader(registration: DiagnosticRegistration(feed: self, id: id))
    }

    /// Stops collecting for a listener: its sequence and iterator are gone, or its consumer was cancelled.
    /// A consumer waiting is answered with the end.
    func remove(_ id: UInt64) {
        let removed = state.withLock { state -> Listener? in
            guard let index = state.listeners.firstIndex(where: { $0.id == id }) else { return nil }
            return state.listeners.remove(at: index)
        }
        guard let removed else { return }
        listenerCount.subtract(1, ordering: .relaxed)
        removed.waiter?.resume(returning: nil)
    }

    /// The flush delay has passed: hands the waiting consumer what came.
    fileprivate func flush(_ id: UInt64) {
        let woken = state.withLock { state -> (CheckedContinuation<DiagnosticBatch?, Never>, DiagnosticBatch)? in
            guard let index = state.listeners.firstIndex(where: { $0.id == id }) else { return nil }
            state.listeners[index].isFlushScheduled = false
            guard let waiter = state.listeners[index].waiter, !state.listeners[index].pending.records.isEmpty else {
                return nil
            }
            state.listeners[index].waiter = nil
            return (waiter, state.listeners[index].takePending())
        }
        if let (waiter, batch) = woken { waiter.resume(returning: batch) }
    }

    /// Every record not taken yet, waiting for one if there is none; `nil` once the listener ended or its
    /// consumer was cancelled.
    /// - Parameter spent: The consumer's previous batch, read to the end: its storage collects the next one.
    fileprivate func take(_ id: UInt64, returning spent: consuming [DiagnosticRecord]) async -> DiagnosticBatch? {
        var spare = spent
        spare.removeAll(keepingCapacity: true)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DiagnosticBatch?, Never>) in
                let now: DiagnosticBatch?? = state.withLock { state in
                    guard let index = state.listeners.firstIndex(where: { $0.id == id }), !Task.isCancelled else {
                        return .some(nil)
                    }
                    if state.listeners[index].spare.capacity < spare.capacity {
                        swap(&state.listeners[index].spare, &spare)
                    }
                    if !state.listeners[index].pending.records.isEmpty {
                        return .some(state.listeners[index].takePending())
                    }
                    state.listeners[index].waiter = continuation
                    return nil
                }
                guard let now else { return }
                // Cancelled before it waited: the listener ends as if its waiter had been cancelled.
                if now == nil { remove(id) }
                continuation.resume(returning: now)
            }
        } onCancel: {
            remove(id)
        }
    }
}

/// A listener's pending flush, for the process's flush timer.
private final class DiagnosticFlush: Sendable, DeadlineAction {
    let feed: DiagnosticsFeed
    let id: UInt64

    init(feed: DiagnosticsFeed, id: UInt64) {
        self.feed = feed
        self.id = id
    }

    func deadlinePassed() { feed.flush(id) }
}

/// Held by a sequence and its iterator (never by the feed): when both are gone, its `deinit` ends the
/// listener. It can never be freed inside the feed's lock, which nothing of it reaches.
final class DiagnosticRegistration: Sendable {
    fileprivate let feed: DiagnosticsFeed
    fileprivate let id: UInt64

    init(feed: DiagnosticsFeed, id: UInt64) {
        self.feed = feed
        self.id = id
    }

    deinit { feed.remove(id) }
}

/// A listener's end of the feed, which ``DiagnosticEvents`` reads through: its events in order, batch by batch.
struct DiagnosticReader: Sendable {
    let registration: DiagnosticRegistration
    /// The batch being read, its records newest first, so that each is moved out, never copied.
    var batch = DiagnosticBatch()

    init(registration: DiagnosticRegistration) { self.registration = registration }

    /// The next event, waiting for one; `nil` once the reading task is cancelled.
    mutating func next(isolation actor: isolated (any Actor)?) async -> DiagnosticEvent? {
        // Made while the batch holds the record's subject.
        if let record = batch.records.popLast() { return DiagnosticEvent(record) }
        var spent: [DiagnosticRecord] = []
        swap(&spent, &batch.records)
        guard let taken = await registration.feed.take(registration.id, returning: spent) else { return nil }
        batch = taken
        batch.records.reverse()
        return batch.records.popLast().map(DiagnosticEvent.init)
    }
}

/// Records, and the subjects and errors they name, held for them: a record retains nothing.
struct DiagnosticBatch: Sendable {
    var records: [DiagnosticRecord] = []
    /// Every subject of `records`, in order, each once per run of records that name it, and every error.
    private var held: [any AnyObject & Sendable] = []

    init(records: [DiagnosticRecord] = []) { self.records = records }

    mutating func append(_ record: DiagnosticRecord, holding subject: DiagnosticSubject?, _ error: DiagnosticErrorBox?)
    {
        if let subject, held.last !== subject { held.append(subject) }
        if let error { held.append(error) }
        records.append(record)
    }

    /// Drops the oldest `count` records. The newest `n` records name at most `n` runs of subjects and `n`
    /// errors: the last `2n` objects hold them all.
    mutating func dropOldest(_ count: Int) {
        records.removeFirst(count)
        if held.count > 2 * records.count { held.removeFirst(held.count - 2 * records.count) }
    }
}
