import Synchronization

// What the emitting thread records of a diagnostic event, and how the consumer reads it back.

/// What the library and the events name: a request's method and URL, or an object and an item type. Made once
/// per request or object and shared by its events, so that recording an event copies no text.
@usableFromInline final class DiagnosticSubject: Sendable {
    @usableFromInline let method: String?
    @usableFromInline let url: String?
    @usableFromInline let object: String?
    @usableFromInline let itemType: String?
    /// A request's attempt in flight: when its `requestStarted` was emitted, in nanoseconds of the session's
    /// timeline; `Int64.min` when it was not. Written and read by the request's own task only, so that its
    /// `requestFinished` needs no lookup.
    let attemptStart = Atomic<Int64>(.min)

    @usableFromInline init(method: String? = nil, url: String? = nil, object: String? = nil, itemType: String? = nil) {
        self.method = method
        self.url = url
        self.object = object
        self.itemType = itemType
    }

    /// A time as whole nanoseconds, clamped to what 64 bits hold (292 years).
    private static func nanoseconds(_ time: Duration) -> Int64 {
        let (seconds, overflow) = time.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return time < .zero ? .min + 1 : .max }
        let (total, overflowAgain) = seconds.addingReportingOverflow(time.components.attoseconds / 1_000_000_000)
        if overflowAgain { return time < .zero ? .min + 1 : .max }
        return max(total, .min + 1)
    }

    /// When the attempt in flight started, if its start was emitted.
    var attemptStartedAt: Duration? {
        get {
            let nanoseconds = attemptStart.load(ordering: .relaxed)
            return nanoseconds == .min ? nil : .nanoseconds(nanoseconds)
        }
        set {
            attemptStart.store(newValue.map(Self.nanoseconds) ?? .min, ordering: .relaxed)
        }
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
