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
        /// The kind's stable name.
        public let name: String
        init(_ name: String) { self.name = name }

        /// An attempt of a request is about to be sent: ``requestID``, ``method``, ``url``, ``attempt``.
        public static let requestStarted = Kind("requestStarted")
        /// An attempt of a request ended: ``requestID``, ``method``, ``url``, ``attempt``, ``duration``,
        /// and ``status`` and ``bytes`` when a response arrived (``notModified`` for a `304`), or ``error``.
        public static let requestFinished = Kind("requestFinished")
        /// An attempt failed and the request is sent again after ``delay``: ``requestID``, ``url``,
        /// ``attempt`` (the one that failed), ``error``.
        public static let retry = Kind("retry")
        /// The session's ``Authenticator`` refreshed a rejected credential: ``url`` of the request that was
        /// rejected, and ``error`` if the refresh failed.
        public static let credentialRefresh = Kind("credentialRefresh")
        /// A resource or list changed state: ``object``, ``stateSummary``, ``previousStateSummary``.
        public static let stateChanged = Kind("stateChanged")
        /// A read was answered from memory, without a request (``ReadPolicy/skipIfLoaded``,
        /// ``ReadPolicy/skipIfFresh``…): ``object``.
        public static let cacheHit = Kind("cacheHit")
        /// A caller joined an operation already in flight on the object instead of sending a request:
        /// ``object``, and ``callers``, how many callers now wait on the object.
        public static let joined = Kind("joined")
        /// An operation of the object ended and answered ``callers`` callers at once: more than one when
        /// reads were coalesced.
        public static let operationFinished = Kind("operationFinished")
        /// A holder in a ``ResourceStore`` learnt about items and the store told the other live holders:
        /// ``object`` (the holder that learnt), ``itemType``, ``itemCount`` and ``receivers`` (how many
        /// other holders heard it).
        public static let storeNews = Kind("storeNews")

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

/// Where a session's diagnostic events go: nowhere, at the cost of one atomic load, until someone listens.
@usableFromInline final class DiagnosticsFeed: Sendable {
    @usableFromInline let listenerCount = Atomic<Int>(0)
    private let listeners = Locked<[WeakDiagnosticBuffer]>([])

    @usableFromInline init() {}

    /// Whether anyone listens: every emitting site checks this before it builds an event.
    @inlinable var isActive: Bool { listenerCount.load(ordering: .relaxed) > 0 }

    /// Hands the event to every listener. Appended under the lock, so every listener sees events in the
    /// order the library emitted them, from whatever thread.
    @usableFromInline func emit(_ event: DiagnosticEvent) {
        listeners.withLock { listeners in
            var sawFreed = false
            for listener in listeners {
                // A buffer freed here only decrements the count in its `deinit`: no lock is taken.
                if let buffer = listener.buffer { buffer.append(event) } else { sawFreed = true }
            }
            if sawFreed { listeners.removeAll { $0.buffer == nil } }
        }
    }

    func events(bufferingNewest limit: Int) -> DiagnosticEvents {
        let buffer = DiagnosticBuffer(limit: max(1, limit), feed: self)
        listeners.withLock { listeners in
            listeners.removeAll { $0.buffer == nil }
            listeners.append(WeakDiagnosticBuffer(buffer: buffer))
        }
        listenerCount.add(1, ordering: .relaxed)
        return DiagnosticEvents(buffer: buffer)
    }
}

struct WeakDiagnosticBuffer {
    weak var buffer: DiagnosticBuffer?
}

/// One listener's unread events. Its consumer takes them in batches: a waiting consumer is woken
/// ``flushDelay`` after the first event it has not seen, with everything that came meanwhile, so a burst of
/// events costs one wake-up and the thread that emits them never wakes another.
final class DiagnosticBuffer: Sendable, DeadlineAction {
    private struct State {
        var pending: [DiagnosticEvent] = []
        var waiter: CheckedContinuation<[DiagnosticEvent]?, Never>?
        var isFinished = false
        var isFlushScheduled = false
    }

    /// How long a waiting consumer's first event waits for company.
    static let flushDelay = Duration.milliseconds(1)
    /// One timer for every buffer of the process, on the real clock: a session's `ManualClock` must not hold
    /// events back.
    private static let flusher = DeadlineScheduler(timeline: Timeline(ContinuousClock()))
    private static let now = Timeline(ContinuousClock())

    private let state = Locked(State())
    private let limit: Int
    private let feed: DiagnosticsFeed

    init(limit: Int, feed: DiagnosticsFeed) {
        self.limit = limit
        self.feed = feed
    }

    deinit { feed.listenerCount.subtract(1, ordering: .relaxed) }

    func append(_ event: DiagnosticEvent) {
        let mustSchedule = state.withLock { state in
            guard !state.isFinished else { return false }
            state.pending.append(event)
            if state.pending.count > limit { state.pending.removeFirst(state.pending.count - limit) }
            guard state.waiter != nil, !state.isFlushScheduled else { return false }
            state.isFlushScheduled = true
            return true
        }
        if mustSchedule { _ = Self.flusher.schedule(at: Self.now.now + Self.flushDelay, self) }
    }

    /// The flush delay has passed: hands the waiting consumer what came.
    func deadlinePassed() {
        let woken: (CheckedContinuation<[DiagnosticEvent]?, Never>, [DiagnosticEvent])? = state.withLock { state in
            state.isFlushScheduled = false
            guard let waiter = state.waiter, !state.pending.isEmpty else { return nil }
            state.waiter = nil
            defer { state.pending = [] }
            return (waiter, state.pending)
        }
        if let (waiter, batch) = woken { waiter.resume(returning: batch) }
    }

    /// Every event not taken yet, waiting for one if there is none; `nil` once the consumer was cancelled.
    func take() async -> [DiagnosticEvent]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[DiagnosticEvent]?, Never>) in
                let now: [DiagnosticEvent]?? = state.withLock { state in
                    if !state.pending.isEmpty {
                        defer { state.pending = [] }
                        return .some(state.pending)
                    }
                    if state.isFinished || Task.isCancelled {
                        state.isFinished = true
                        return .some(nil)
                    }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.isFinished = true
                state.pending = []
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
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

    let buffer: DiagnosticBuffer

    /// Makes the iterator; a sequence is meant to be iterated once.
    public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    /// Takes the events in order.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: DiagnosticBuffer
        var batch: [DiagnosticEvent] = []
        var position = 0

        /// The next event, waiting for one; `nil` once the iterating task is cancelled.
        public mutating func next() async -> DiagnosticEvent? {
            await next(isolation: nil)
        }

        /// The next event, for an isolated caller; `nil` once the iterating task is cancelled.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> DiagnosticEvent? {
            if position == batch.count {
                guard let taken = await buffer.take() else { return nil }
                batch = taken
                position = 0
            }
            defer { position += 1 }
            return batch[position]
        }
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

/// A state's case, for diagnostics and snapshots: never its value.
@usableFromInline protocol DiagnosticSummarizing {
    var diagnosticSummary: String { get }
}

extension ResourceState: DiagnosticSummarizing {
    @usableFromInline var diagnosticSummary: String {
        switch self {
        case .idle: "idle"
        case .loading: "loading"
        case .available: "available"
        case .failure(let error, _): "failure(\(error.code))"
        }
    }
}

extension ListState: DiagnosticSummarizing {
    @usableFromInline var diagnosticSummary: String {
        "\(content.diagnosticSummary), \(items.count) items\(pagination.isLoadingNextPage ? ", loading next page" : "")"
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
