import Foundation

// What the emitting thread records of a diagnostic event, and how the consumer reads it back.

/// What the library and the events name: a request's method and URL, or an object and an item type. Made once
/// per request or object and shared by its events, so that recording an event copies no text.
@usableFromInline package final class DiagnosticSubject: Sendable {
    @usableFromInline let method: String?
    @usableFromInline let url: String?
    @usableFromInline package let object: String?
    @usableFromInline let itemType: String?
    /// Where a redirect leads, redacted: a redirect's event has a subject of its own.
    let location: String?
    /// A request's URL as the call gave it, unredacted: what the session compares to reuse the subject.
    let source: URL?

    @usableFromInline package convenience init(
        method: String? = nil, url: String? = nil, object: String? = nil, itemType: String? = nil
    ) {
        self.init(method: method, url: url, object: object, itemType: itemType, source: nil)
    }

    init(
        method: String?, url: String?, object: String?, itemType: String?, source: URL?, location: String? = nil
    ) {
        self.location = location
        self.method = method
        self.url = url
        self.object = object
        self.itemType = itemType
        self.source = source
    }
}

/// A state as events describe it: its case, a list's item count and whether a next page loads. Never a
/// value; the text of ``DiagnosticEvent/stateSummary`` is made from it by the consumer.
@usableFromInline package struct DiagnosticState: Sendable, BitwiseCopyable, Equatable {
    @usableFromInline package enum Content: UInt8, Sendable, BitwiseCopyable { case idle, loading, available, failure }

    @usableFromInline var content: Content
    @usableFromInline package var isLoadingNextPage = false
    /// A list's item count; `-1` for a resource.
    @usableFromInline package var items: Int32 = -1
    /// The failure's code, as ``NetworkError/codeNumber``: a number, so that the state holds no reference.
    @usableFromInline var errorCode: UInt8 = .max

    @inlinable package init(_ content: Content, error: NetworkError? = nil) {
        self.content = content
        if let error { errorCode = error.codeNumber }
    }

    /// The state in one word of a record: the case, the next-page flag, the error code and the item count.
    @inlinable var packed: UInt64 {
        UInt64(content.rawValue) | UInt64(isLoadingNextPage ? 1 : 0) << 8 | UInt64(errorCode) << 16
            | UInt64(UInt32(bitPattern: items)) << 32
    }

    @inlinable init(packed: UInt64) {
        content = Content(rawValue: UInt8(truncatingIfNeeded: packed)) ?? .idle
        isLoadingNextPage = UInt8(truncatingIfNeeded: packed >> 8) != 0
        errorCode = UInt8(truncatingIfNeeded: packed >> 16)
        items = Int32(bitPattern: UInt32(truncatingIfNeeded: packed >> 32))
    }

    /// `idle`, `loading`, `available`, `failure(timeout)`; a list's adds its item count.
    package var summary: String {
        let text =
            switch content {
            case .idle: "idle"
            case .loading: "loading"
            case .available: "available"
            case .failure:
                "failure(\(NetworkError.Code.numbered(errorCode)?.name ?? "unknown"))"
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
/// into a ``DiagnosticEvent``.
///
/// 48 bytes, three records to two cache lines: each record is written once into memory the consumer's core
/// reads next, so its size is what a listener costs the emitting thread in cache traffic. No kind fills every
/// property, so the properties share slots, and flags say which are set:
/// - `first`: the request id, or the state after a change;
/// - `second`: the byte count, the error, or the state before a change;
/// - `small`: the attempt, or the number of callers or items; `smallToo`: the status, or the receivers.
/// Numbers the library makes are small: they are kept in 32 bits, clamped; a time in 64-bit nanoseconds
/// (292 years), clamped.
@usableFromInline package struct DiagnosticRecord: Sendable, BitwiseCopyable {
    @usableFromInline enum Flag {
        @inlinable static var notModified: UInt8 { 1 }
        @inlinable static var hasTime: UInt8 { 1 << 1 }
        @inlinable static var hasError: UInt8 { 1 << 2 }
        @inlinable static var hasRequestID: UInt8 { 1 << 3 }
        @inlinable static var hasState: UInt8 { 1 << 4 }
        @inlinable static var hasPreviousState: UInt8 { 1 << 5 }
        /// `small` is a count and `smallToo` the receivers, not an attempt and a status.
        @inlinable static var countsCallers: UInt8 { 1 << 6 }
        @inlinable static var hasBytes: UInt8 { 1 << 7 }
    }

    /// Not retained: the listener that holds the record holds its subject (see ``DiagnosticBatch``), so that
    /// the emitting thread and the consumer never both count references to it. Set by the feed.
    @usableFromInline var subjectReference: Unmanaged<DiagnosticSubject>?
    @usableFromInline var first: UInt64 = 0
    @usableFromInline var second: UInt64 = 0
    /// The attempt's duration, or the wait before a retry.
    @usableFromInline var nanoseconds: Int64 = 0
    @usableFromInline var small: Int32 = -1
    @usableFromInline var smallToo: Int32 = -1
    /// The kind's number: a public type is not promised to be bitwise copyable.
    @usableFromInline let kindNumber: UInt8
    @usableFromInline var flags: UInt8 = 0

    @inlinable package init(_ kind: DiagnosticEvent.Kind) { kindNumber = kind.rawValue }

    @inlinable var kind: DiagnosticEvent.Kind { DiagnosticEvent.Kind(kindNumber) }

    @inlinable func has(_ flag: UInt8) -> Bool { flags & flag != 0 }

    @inlinable mutating func set(_ flag: UInt8, _ isSet: Bool) {
        flags = isSet ? flags | flag : flags & ~flag
    }

    /// Puts a value in a shared slot (`first`, or else `second`) for the property whose flag is `flag`: a value
    /// takes the slot from the properties in `others`; `nil` clears the slot only if the property had it.
    @inlinable mutating func store(_ value: UInt64?, inFirst: Bool, flag: UInt8, others: UInt8) {
        if value != nil {
            flags = (flags & ~others) | flag
        } else if has(flag) {
            flags &= ~flag
        } else {
            return
        }
        if inFirst { first = value ?? 0 } else { second = value ?? 0 }
    }

    @inlinable var notModified: Bool {
        get { has(Flag.notModified) }
        set { set(Flag.notModified, newValue) }
    }
    @inlinable var requestID: UInt64? {
        get { has(Flag.hasRequestID) ? first : nil }
        set { store(newValue, inFirst: true, flag: Flag.hasRequestID, others: Flag.hasState) }
    }
    @inlinable var attempt: Int? {
        get { has(Flag.countsCallers) || small < 0 ? nil : Int(small) }
        set { small = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    @inlinable var status: Int? {
        get { has(Flag.countsCallers) || smallToo < 0 ? nil : Int(smallToo) }
        set { smallToo = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    /// Callers, or the item count of store news.
    @inlinable package var count: Int? {
        get { has(Flag.countsCallers) && small >= 0 ? Int(small) : nil }
        set {
            flags |= Flag.countsCallers
            small = newValue.map { Int32(clamping: $0) } ?? -1
        }
    }
    @inlinable package var receivers: Int? {
        get { has(Flag.countsCallers) && smallToo >= 0 ? Int(smallToo) : nil }
        set {
            flags |= Flag.countsCallers
            smallToo = newValue.map { Int32(clamping: $0) } ?? -1
        }
    }
    /// A record with an error keeps no byte count: the two share a slot, and no kind has both.
    @inlinable var bytes: Int? {
        get { has(Flag.hasBytes) ? Int(truncatingIfNeeded: second) : nil }
        set {
            store(
                newValue.map { UInt64(truncatingIfNeeded: $0) }, inFirst: false, flag: Flag.hasBytes,
                others: Flag.hasError | Flag.hasPreviousState)
        }
    }
    /// The error, held like the subject; set by the feed from what the emitting site gave it.
    @inlinable var errorReference: Unmanaged<DiagnosticErrorBox>? {
        get { has(Flag.hasError) ? UnsafeRawPointer(bitPattern: UInt(second)).map(Unmanaged.fromOpaque) : nil }
        set {
            store(
                newValue.map { UInt64(UInt(bitPattern: $0.toOpaque())) }, inFirst: false, flag: Flag.hasError,
                others: Flag.hasBytes | Flag.hasPreviousState)
        }
    }
    @inlinable package var state: DiagnosticState? {
        get { has(Flag.hasState) ? DiagnosticState(packed: first) : nil }
        set { store(newValue?.packed, inFirst: true, flag: Flag.hasState, others: Flag.hasRequestID) }
    }
    @inlinable package var previousState: DiagnosticState? {
        get { has(Flag.hasPreviousState) ? DiagnosticState(packed: second) : nil }
        set {
            store(newValue?.packed, inFirst: false, flag: Flag.hasPreviousState, others: Flag.hasBytes | Flag.hasError)
        }
    }
    @inlinable var time: Duration? {
        get { has(Flag.hasTime) ? .nanoseconds(nanoseconds) : nil }
        set {
            set(Flag.hasTime, newValue != nil)
            nanoseconds = newValue?.clampedNanoseconds ?? 0
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
        location = subject?.location
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
