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
    private let listeners = Locked<(next: UInt64, all: [UInt64: AsyncStream<DiagnosticEvent>.Continuation])>(
        (0, [:]))

    @usableFromInline init() {}

    /// Whether anyone listens: every emitting site checks this before it builds an event.
    @inlinable var isActive: Bool { listenerCount.load(ordering: .relaxed) > 0 }

    /// Hands the event to every listener. Yielded under the lock, so every listener sees events in the order
    /// the library emitted them, from whatever thread.
    @usableFromInline func emit(_ event: DiagnosticEvent) {
        listeners.withLock { listeners in
            for continuation in listeners.all.values { continuation.yield(event) }
        }
    }

    func stream(bufferingNewest limit: Int) -> AsyncStream<DiagnosticEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: DiagnosticEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = listeners.withLock { listeners in
            listeners.next &+= 1
            listeners.all[listeners.next] = continuation
            listenerCount.add(1, ordering: .relaxed)
            return listeners.next
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.listeners.withLock { listeners in
                if listeners.all.removeValue(forKey: id) != nil { self.listenerCount.subtract(1, ordering: .relaxed) }
            }
        }
        return stream
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
    /// A new stream of what the session, and every resource, list and store using it, does: requests and
    /// their attempts, retries, credential refreshes, state changes, answers from memory, coalesced callers
    /// and store news (see ``DiagnosticEvent``).
    ///
    /// Events are redacted like the logs. Every stream sees every event from the moment it is made, in the
    /// order the library emitted them. While no stream exists, no event is built: each place that could
    /// emit one costs one atomic load. Cancelling the task that iterates the stream unregisters it.
    /// - Parameter limit: How many unread events the stream keeps; older ones are dropped first.
    /// - Returns: The stream.
    public nonisolated func diagnostics(bufferingNewest limit: Int = 10_000) -> AsyncStream<DiagnosticEvent> {
        feed.stream(bufferingNewest: limit)
    }
}
