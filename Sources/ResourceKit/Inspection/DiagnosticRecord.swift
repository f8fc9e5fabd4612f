import Foundation

// What the emitting thread records of a diagnostic event, and how the consumer reads it back.

/// What the library and the events name: a request's method and URL, or an object and an item type. Made once
/// per request or object and shared by its events, so that recording an event copies no text.
@usableFromInline final class DiagnosticSubject: Sendable {
    @usableFromInline let method: String?
    @usableFromInline let url: String?
    @usableFromInline let object: String?
    @usableFromInline let itemType: String?
    /// A request's URL as the call gave it, unredacted: what the session compares to reuse the subject.
    let source: URL?

    @usableFromInline convenience init(
        method: String? = nil, url: String? = nil, object: String? = nil, itemType: String? = nil
    ) {
        self.init(method: method, url: url, object: object, itemType: itemType, source: nil)
    }

    init(method: String?, url: String?, object: String?, itemType: String?, source: URL?) {
        self.method = method
        self.url = url
        self.object = object
        self.itemType = itemType
        self.source = source
    }
}

/// A state as events describe it: its case, a list's item count and whether a next page loads. Never a
/// value; the text of ``DiagnosticEvent/stateSummary`` is made from it by the consumer.
@usableFromInline struct DiagnosticState: Sendable, BitwiseCopyable {
    @usableFromInline enum Content: UInt8, Sendable, BitwiseCopyable { case idle, loading, available, failure }

    @usableFromInline var content: Content
    @usableFromInline var isLoadingNextPage = false
    /// A list's item count; `-1` for a resource.
    @usableFromInline var items: Int32 = -1
    /// The failure's code, as ``NetworkError/codeNumber``: a number, so that the state holds no reference.
    @usableFromInline var errorCode: UInt8 = .max

    @inlinable init(_ content: Content, error: NetworkError? = nil) {
        self.content = content
        if let error { errorCode = error.codeNumber }
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
            case .failure:
                "failure(\(Int(errorCode) < NetworkError.Code.numbered.count ? NetworkError.Code.numbered[Int(errorCode)].name : "unknown"))"
            }
        guard items >= 0 else { return text }
        return "\(text), \(items) items\(isLoadingNextPage ? ", loading next page" : "")"
    }
}

/// An error a record names, held for it by the listener's batch, like its subject.
@usableFromInline final class DiagnosticErrorBox: Sendable {
    let error: NetworkError
    init(_ error: NetworkError) { self.error = error }
}

/// An event as the library records it, on the thread that emits it: numbers and references it does not hold,
/// so that copying one is copying bytes and a listener costs a read little. The listener's iterator turns it
/// into a ``DiagnosticEvent``. Numbers the library makes are small: they are kept in 32 bits, clamped.
@usableFromInline struct DiagnosticRecord: Sendable, BitwiseCopyable {
    /// The kind's number: a public type is not promised to be bitwise copyable.
    @usableFromInline let kindNumber: UInt8
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
    /// The error, held like the subject; set by the feed from what the emitting site gave it.
    @usableFromInline var errorReference: Unmanaged<DiagnosticErrorBox>?
    @usableFromInline var state: DiagnosticState?
    @usableFromInline var previousState: DiagnosticState?

    @inlinable init(_ kind: DiagnosticEvent.Kind) { kindNumber = kind.rawValue }

    @inlinable var kind: DiagnosticEvent.Kind { DiagnosticEvent.Kind(kindNumber) }

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
        error = record.errorReference?.takeUnretainedValue().error
        stateSummary = record.state?.summary
        previousStateSummary = record.previousState?.summary
        if kind == .storeNews { itemCount = record.count } else { callers = record.count }
        receivers = record.receivers
    }
}
