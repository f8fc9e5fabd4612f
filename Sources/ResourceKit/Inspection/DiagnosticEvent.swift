public import Synchronization

/// One thing the library did, for a developer to watch or record: what ``NetworkSession/diagnostics(bufferingNewest:)``
/// streams.
///
/// Read ``kind``, then the properties that kind fills. URLs and errors are redacted by the session's
/// ``LogRedaction``, as in the logs; states are summarized by their case (``stateSummary``), never by their
/// values. A later release may add kinds and properties: a `switch` over ``kind`` needs a `default`.
public struct DiagnosticEvent: Sendable, Equatable, CustomStringConvertible {
    /// Which event this is, in a set that may grow.
    public struct Kind: Sendable, Hashable, Codable, CustomStringConvertible {
        // A number, so that making and copying an event's kind costs nothing; the names are looked up.
        @usableFromInline let rawValue: UInt8
        @inlinable init(_ rawValue: UInt8) { self.rawValue = rawValue }

        private static let names = [
            "requestStarted", "requestFinished", "retry", "credentialRefresh", "stateChanged", "cacheHit", "joined",
            "operationFinished", "storeNews",
        ]

        /// The kind's stable name.
        public var name: String { Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : "kind\(rawValue)" }

        /// Decodes a kind from its name.
        /// - Parameter decoder: The decoder to read from.
        public init(from decoder: any Decoder) throws {
            let name = try decoder.singleValueContainer().decode(String.self)
            guard let index = Self.names.firstIndex(of: name) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "unknown kind \(name)"))
            }
            self.init(UInt8(index))
        }

        /// Encodes the kind as its name.
        /// - Parameter encoder: The encoder to write to.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }

        /// An attempt of a request is about to be sent: ``requestID``, ``method``, ``url``, ``attempt``.
        @inlinable public static var requestStarted: Kind { Kind(0) }
        /// An attempt of a request ended: ``requestID``, ``method``, ``url``, ``attempt``, ``duration``,
        /// and ``status`` and ``bytes`` when a response arrived (``notModified`` for a `304`), or ``error``.
        @inlinable public static var requestFinished: Kind { Kind(1) }
        /// An attempt failed and the request is sent again after ``delay``: ``requestID``, ``url``,
        /// ``attempt`` (the one that failed), ``error``.
        @inlinable public static var retry: Kind { Kind(2) }
        /// The session's ``Authenticator`` refreshed a rejected credential: ``url`` of the request that was
        /// rejected, and ``error`` if the refresh failed.
        @inlinable public static var credentialRefresh: Kind { Kind(3) }
        /// A resource or list changed state: ``object``, ``stateSummary``, ``previousStateSummary``.
        @inlinable public static var stateChanged: Kind { Kind(4) }
        /// A read was answered from memory, without a request (``ReadPolicy/skipIfLoaded``,
        /// ``ReadPolicy/skipIfFresh``…): ``object``.
        @inlinable public static var cacheHit: Kind { Kind(5) }
        /// A caller joined an operation already in flight on the object instead of sending a request:
        /// ``object``, and ``callers``, how many callers now wait on the object.
        @inlinable public static var joined: Kind { Kind(6) }
        /// An operation of the object ended and answered ``callers`` callers at once: more than one when
        /// reads were coalesced.
        @inlinable public static var operationFinished: Kind { Kind(7) }
        /// A holder in a ``ResourceStore`` learnt about items and the store told the other live holders:
        /// ``object`` (the holder that learnt), ``itemType``, ``itemCount`` and ``receivers`` (how many
        /// other holders heard it).
        @inlinable public static var storeNews: Kind { Kind(8) }

        /// The kind's name.
        public var description: String { name }
    }

    /// Which event this is.
    public let kind: Kind
    /// The request, for request events: one id per call of the session, shared by its attempts.
    public var requestID: UInt64?
    /// The request's method.
    public var method: String?
    /// The request's URL, redacted.
    public var url: String?
    /// The attempt (1 for the first).
    public var attempt: Int?
    /// The response's status code.
    public var status: Int?
    /// The response body's size in bytes.
    public var bytes: Int?
    /// How long the attempt took.
    public var duration: Duration?
    /// Whether the response was a `304 Not Modified` that answered a conditional request.
    public var notModified = false
    /// The error, redacted.
    public var error: NetworkError?
    /// The wait before a retry.
    public var delay: Duration?
    /// The resource or list, as in `Resource<RemotePost> "42"` or `ListResource<RemoteFeed>`.
    public var object: String?
    /// The new state's case: `idle`, `loading`, `available`, `failure(timeout)`; a list's adds its item count.
    public var stateSummary: String?
    /// The previous state's case.
    public var previousStateSummary: String?
    /// How many callers wait on, or were answered by, the object.
    public var callers: Int?
    /// How many other holders heard store news.
    public var receivers: Int?
    /// The item type of store news.
    public var itemType: String?
    /// How many items store news was about.
    public var itemCount: Int?

    /// Creates an event of a kind, its properties empty; for tests and tools that replay events.
    /// - Parameter kind: The kind.
    public init(_ kind: Kind) { self.kind = kind }

    /// A one-line summary.
    public var description: String {
        var parts = [kind.name]
        if let object { parts.append(object) }
        if let method, let url { parts.append("\(method) \(url)") } else if let url { parts.append(url) }
        if let attempt { parts.append("attempt \(attempt)") }
        if let status { parts.append("status \(status)\(notModified ? " (not modified)" : "")") }
        if let bytes { parts.append("\(bytes) bytes") }
        if let duration { parts.append("\(duration)") }
        if let delay { parts.append("retry in \(delay)") }
        if let previousStateSummary, let stateSummary { parts.append("\(previousStateSummary) → \(stateSummary)") }
        if let callers { parts.append("\(callers) callers") }
        if let itemType, let itemCount { parts.append("\(itemCount) \(itemType)") }
        if let receivers { parts.append("\(receivers) receivers") }
        if let error { parts.append("error: \(error)") }
        return parts.joined(separator: " · ")
    }
}

/// What the library and the events name: a request's method and URL, or an object and an item type. Made once
/// per request or object and shared by its events, so that recording an event copies no text.
@usableFromInline final class DiagnosticSubject: Sendable {
    @usableFromInline let method: String?
    @usableFromInline let url: String?
    @usableFromInline let object: String?
    @usableFromInline let itemType: String?

    @usableFromInline init(method: String? = nil, url: String? = nil, object: String? = nil, itemType: String? = nil) {
        self.method = method
        self.url = url
        self.object = object
        self.itemType = itemType
    }
}

/// A state as events describe it: its case, a list's item count and whether a next page loads. Never a
/// value; the text of ``DiagnosticEvent/stateSummary`` is made from it by the consumer.
@usableFromInline struct DiagnosticState: Sendable {
    @usableFromInline enum Content: UInt8, Sendable { case idle, loading, available, failure }

    @usableFromInline var content: Content
    @usableFromInline var isLoadingNextPage = false
    /// A list's item count; `-1` for a resource.
    @usableFromInline var items: Int32 = -1
    /// The failure's error, for its code.
    @usableFromInline var error: NetworkError?

    @inlinable init(_ content: Content, error: NetworkError? = nil) {
        self.content = content
        self.error = error
    }

    /// The state's case.
    @inlinable static func of<Value>(_ state: ResourceState<Value>) -> DiagnosticState {
        switch state {
        case .idle: DiagnosticState(.idle)
        case .loading: DiagnosticState(.loading)
        case .available: DiagnosticState(.available)
        case .failure(let error, _): DiagnosticState(.failure, error: error)
        }
    }

    /// `idle`, `loading`, `available`, `failure(timeout)`; a list's adds its item count.
    var summary: String {
        let text =
            switch content {
            case .idle: "idle"
            case .loading: "loading"
            case .available: "available"
            case .failure: "failure(\(error?.code.name ?? "unknown"))"
            }
        guard items >= 0 else { return text }
        return "\(text), \(items) items\(isLoadingNextPage ? ", loading next page" : "")"
    }
}

/// An event as the library records it, on the thread that emits it: numbers and one shared reference, a
/// hundred bytes, so that a listener costs a read little. The listener's iterator turns it into a
/// ``DiagnosticEvent``. Numbers the library makes are small: they are kept in 32 bits, clamped.
@usableFromInline struct DiagnosticRecord: Sendable {
    @usableFromInline let kind: DiagnosticEvent.Kind
    @usableFromInline var notModified = false
    @usableFromInline var hasTime = false
    /// 0 for none: request ids start at 1.
    @usableFromInline var requestNumber: UInt64 = 0
    @usableFromInline var attemptNumber: Int32 = -1
    @usableFromInline var statusCode: Int32 = -1
    @usableFromInline var countNumber: Int32 = -1
    @usableFromInline var receiverNumber: Int32 = -1
    @usableFromInline var byteCount = -1
    /// The attempt's duration, or the wait before a retry.
    @usableFromInline var duration = Duration.zero
    /// Not retained: the listener that holds the record holds its subject (see ``DiagnosticBatch``), so that
    /// the emitting thread and the consumer never both count references to it. Set by the feed.
    @usableFromInline var subjectReference: Unmanaged<DiagnosticSubject>?
    @usableFromInline var error: NetworkError?
    @usableFromInline var state: DiagnosticState?
    @usableFromInline var previousState: DiagnosticState?

    @inlinable init(_ kind: DiagnosticEvent.Kind) { self.kind = kind }

    @inlinable var requestID: UInt64? {
        get { requestNumber == 0 ? nil : requestNumber }
        set { requestNumber = newValue ?? 0 }
    }
    @inlinable var attempt: Int? {
        get { attemptNumber < 0 ? nil : Int(attemptNumber) }
        set { attemptNumber = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    @inlinable var status: Int? {
        get { statusCode < 0 ? nil : Int(statusCode) }
        set { statusCode = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    /// Callers, or the item count of store news.
    @inlinable var count: Int? {
        get { countNumber < 0 ? nil : Int(countNumber) }
        set { countNumber = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    @inlinable var receivers: Int? {
        get { receiverNumber < 0 ? nil : Int(receiverNumber) }
        set { receiverNumber = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    @inlinable var bytes: Int? {
        get { byteCount < 0 ? nil : byteCount }
        set { byteCount = newValue ?? -1 }
    }
    @inlinable var time: Duration? {
        get { hasTime ? duration : nil }
        set {
            hasTime = newValue != nil
            duration = newValue ?? .zero
        }
    }
}

extension DiagnosticEvent {
    /// The event a record tells of.
    init(_ record: DiagnosticRecord) {
        self.init(record.kind)
        requestID = record.requestID
        let subject = record.subjectReference?.takeUnretainedValue()
        method = subject?.method
        url = subject?.url
        object = subject?.object
        itemType = subject?.itemType
        attempt = record.attempt
        status = record.status
        bytes = record.bytes
        if kind == .retry { delay = record.time } else { duration = record.time }
        notModified = record.notModified
        error = record.error
        stateSummary = record.state?.summary
        previousStateSummary = record.previousState?.summary
        if kind == .storeNews { itemCount = record.count } else { callers = record.count }
        receivers = record.receivers
    }
}

/// Where a session's diagnostic events go: nowhere, at the cost of one atomic load, until someone listens.
///
/// Every listener's unread records live here, under one lock: recording an event takes that lock once,
/// whatever the number of listeners. A consumer takes its records in batches: a waiting consumer is woken
/// ``flushDelay`` after the first record it has not seen, with everything that came meanwhile, so a burst
/// costs it one wake-up and the thread that emits never wakes another.
@usableFromInline final class DiagnosticsFeed: Sendable {
    private struct Listener {
        let id: UInt64
        let limit: Int
        var pending = DiagnosticBatch()
        /// The record array the consumer gave back, emptied, to collect the next batch in without allocating.
        var spare: [DiagnosticRecord] = []
        var waiter: CheckedContinuation<DiagnosticBatch?, Never>?
        var isFlushScheduled = false

        /// Appends; whether a flush must be scheduled for a waiting consumer.
        mutating func append(_ record: consuming DiagnosticRecord, holding subject: DiagnosticSubject?) -> Bool {
            // Past twice the limit, the oldest go at once: dropping one per event would move them all each time.
            if pending.records.count >= 2 * limit { pending.dropOldest(pending.records.count - limit + 1) }
            pending.append(record, holding: subject)
            guard waiter != nil, !isFlushScheduled else { return false }
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
    /// One timer for every feed of the process, on the real clock: a session's `ManualClock` must not hold
    /// events back.
    private static let flusher = DeadlineScheduler(timeline: Timeline(ContinuousClock()))
    private static let now = Timeline(ContinuousClock())

    @usableFromInline let listenerCount = Atomic<Int>(0)
    private let state = Locked(State())

    @usableFromInline init() {}

    /// Whether anyone listens: every emitting site checks this before it builds an event.
    @inlinable var isActive: Bool { listenerCount.load(ordering: .relaxed) > 0 }

    /// Hands the record to every listener. Appended under the lock, so every listener sees events in the
    /// order the library emitted them, from whatever thread.
    /// - Parameters:
    ///   - record: The event.
    ///   - subject: What it is about; the listeners hold it for the record.
    @usableFromInline func emit(_ record: consuming DiagnosticRecord, about subject: DiagnosticSubject?) {
        var flushes: [UInt64] = []
        record.subjectReference = subject.map(Unmanaged.passUnretained)
        var record = Optional(record)
        state.withLock { state in
            // Copied to every listener but the last, which takes the record itself.
            for index in state.listeners.indices {
                guard let next = index == state.listeners.count - 1 ? record.take() : record else { break }
                if state.listeners[index].append(next, holding: subject) { flushes.append(state.listeners[index].id) }
            }
        }
        for id in flushes {
            _ = Self.flusher.schedule(at: Self.now.now + Self.flushDelay, DiagnosticFlush(feed: self, id: id))
        }
    }

    func events(bufferingNewest limit: Int) -> DiagnosticEvents {
        let id = state.withLock { state in
            state.nextID &+= 1
            state.listeners.append(Listener(id: state.nextID, limit: max(1, limit)))
            return state.nextID
        }
        listenerCount.add(1, ordering: .relaxed)
        return DiagnosticEvents(registration: DiagnosticRegistration(feed: self, id: id))
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

/// The events of ``NetworkSession/diagnostics(bufferingNewest:)``: an `AsyncSequence` that ends when the task
/// iterating it is cancelled.
///
/// Events wait in the sequence until its consumer takes them, at most the newest `limit`; a consumer that
/// falls behind takes them in batches, so a burst of events costs it one wake-up. The sequence stops
/// collecting once it and its iterator are gone.
public struct DiagnosticEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = DiagnosticEvent
    /// The sequence never throws.
    public typealias Failure = Never

    let registration: DiagnosticRegistration

    /// Makes the iterator; a sequence is meant to be iterated once.
    public func makeAsyncIterator() -> Iterator { Iterator(registration: registration) }

    /// Takes the events in order.
    public struct Iterator: AsyncIteratorProtocol {
        let registration: DiagnosticRegistration
        /// The batch being read, its records newest first, so that each is moved out, never copied.
        var batch = DiagnosticBatch()

        /// The next event, waiting for one; `nil` once the iterating task is cancelled.
        public mutating func next() async -> DiagnosticEvent? {
            await next(isolation: nil)
        }

        /// The next event, for an isolated caller; `nil` once the iterating task is cancelled.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> DiagnosticEvent? {
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
}

/// Records, and the subjects they name, held for them: a record does not retain its subject.
struct DiagnosticBatch: Sendable {
    var records: [DiagnosticRecord] = []
    /// Every subject of `records`, in order, each once per run of records that name it.
    private var subjects: [DiagnosticSubject] = []

    init(records: [DiagnosticRecord] = []) { self.records = records }

    mutating func append(_ record: consuming DiagnosticRecord, holding subject: DiagnosticSubject?) {
        if let subject, subjects.last !== subject { subjects.append(subject) }
        records.append(record)
    }

    /// Drops the oldest `count` records. The newest `n` records name at most `n` runs of subjects: the last `n`
    /// subjects hold them all.
    mutating func dropOldest(_ count: Int) {
        records.removeFirst(count)
        if subjects.count > records.count { subjects.removeFirst(subjects.count - records.count) }
    }
}

/// Names of types, worked out once per type: printing a type's name demangles it.
enum TypeNames {
    /// How a name is shown.
    enum Form: UInt8 {
        case bare, resource, list
    }

    private struct Key: Hashable {
        var type: ObjectIdentifier
        var form: Form
    }

    private static let names = Locked<[Key: String]>([:])

    /// The type's name, as in `Post`, `Resource<RemotePost>` or `ListResource<RemoteFeed>`.
    static func name(of type: Any.Type, as form: Form = .bare) -> String {
        let key = Key(type: ObjectIdentifier(type), form: form)
        if let name = names.withLock({ $0[key] }) { return name }
        let bare = String(describing: type)
        let name =
            switch form {
            case .bare: bare
            case .resource: "Resource<" + bare + ">"
            case .list: "ListResource<" + bare + ">"
            }
        names.withLock { $0[key] = name }
        return name
    }
}

extension NetworkSession {
    /// A new sequence of what the session, and every resource, list and store using it, does: requests and
    /// their attempts, retries, credential refreshes, state changes, answers from memory, coalesced callers
    /// and store news (see ``DiagnosticEvent``).
    ///
    /// Events are redacted like the logs. Every sequence sees every event from the moment it is made, in the
    /// order the library emitted them. While no sequence exists, no event is built: each place that could
    /// emit one costs one atomic load. Cancelling the task that iterates it ends it; a sequence and its
    /// iterator that are gone stop collecting.
    /// - Parameter limit: How many unread events the stream keeps; older ones are dropped first.
    /// - Returns: The stream.
    public nonisolated func diagnostics(bufferingNewest limit: Int = 10_000) -> DiagnosticEvents {
        feed.events(bufferingNewest: limit)
    }
}
