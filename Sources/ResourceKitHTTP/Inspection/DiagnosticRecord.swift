import Foundation

// What the emitting thread records of a diagnostic event, and how the consumer reads it back.

/// What the events name: a request's method and URL, or what a module above this one names (ResourceKit: an
/// object and an item type), with how that module turns its records into events. Made once per request or
/// object and shared by its events, so that recording an event copies no text.
@usableFromInline package final class DiagnosticSubject: Sendable {
    @usableFromInline let method: String?
    @usableFromInline let url: String?
    /// What a module above names the subject by (ResourceKit: `Resource<RemotePost> posts/42`).
    @usableFromInline package let name: String?
    /// A second text that module names it by (ResourceKit: the item type of store news).
    @usableFromInline package let detail: String?
    /// Fills an event of a kind that module added from a record whose slots it wrote.
    @usableFromInline let render: (@Sendable (DiagnosticSubject, DiagnosticRecord, inout DiagnosticEvent) -> Void)?
    /// Where a redirect leads, redacted: a redirect's event has a subject of its own.
    let location: String?
    /// A request's URL as the call gave it, unredacted: what the session compares to reuse the subject.
    let source: URL?

    /// A subject of a module above this one: its names, and how its records become events.
    @usableFromInline package init(
        name: String?, detail: String? = nil,
        render: @escaping @Sendable (DiagnosticSubject, DiagnosticRecord, inout DiagnosticEvent) -> Void
    ) {
        self.name = name
        self.detail = detail
        self.render = render
        method = nil
        url = nil
        location = nil
        source = nil
    }

    init(method: String?, url: String?, source: URL?, location: String? = nil) {
        self.location = location
        self.method = method
        self.url = url
        self.source = source
        name = nil
        detail = nil
        render = nil
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
/// - `first`: the request id;
/// - `second`: the byte count, or the error;
/// - `small`: the attempt; `smallToo`: the status.
/// A record of a kind a module above this one adds (``init(subjectKind:)``) holds what that module wrote in
/// `first`, `second`, `small` and `smallToo`, and its subject's `render` reads them back.
/// Numbers the library makes are small: they are kept in 32 bits, clamped; a time in 64-bit nanoseconds
/// (292 years), clamped.
@usableFromInline package struct DiagnosticRecord: Sendable, BitwiseCopyable {
    @usableFromInline enum Flag {
        @inlinable static var notModified: UInt8 { 1 }
        @inlinable static var hasTime: UInt8 { 1 << 1 }
        @inlinable static var hasError: UInt8 { 1 << 2 }
        @inlinable static var hasRequestID: UInt8 { 1 << 3 }
        /// The slots are the subject's module's (``init(subjectKind:)``), not a request's.
        @inlinable static var subjectSlots: UInt8 { 1 << 4 }
        @inlinable static var hasBytes: UInt8 { 1 << 7 }
    }

    /// Not retained: the listener that holds the record holds its subject (see ``DiagnosticBatch``), so that
    /// the emitting thread and the consumer never both count references to it. Set by the feed.
    @usableFromInline var subjectReference: Unmanaged<DiagnosticSubject>?
    @usableFromInline package var first: UInt64 = 0
    @usableFromInline package var second: UInt64 = 0
    /// The attempt's duration, or the wait before a retry.
    @usableFromInline var nanoseconds: Int64 = 0
    @usableFromInline package var small: Int32 = -1
    @usableFromInline package var smallToo: Int32 = -1
    /// The kind's number: a public type is not promised to be bitwise copyable.
    @usableFromInline let kindNumber: UInt8
    @usableFromInline var flags: UInt8 = 0

    @inlinable init(_ kind: DiagnosticEvent.Kind) { kindNumber = kind.rawValue }

    /// A record of a kind a module above this one adds: its slots are that module's, for its subject's `render`.
    @inlinable package init(subjectKind kind: DiagnosticEvent.Kind) {
        kindNumber = kind.rawValue
        flags = Flag.subjectSlots
    }

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
        set { store(newValue, inFirst: true, flag: Flag.hasRequestID, others: 0) }
    }
    @inlinable var attempt: Int? {
        get { small < 0 ? nil : Int(small) }
        set { small = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    @inlinable var status: Int? {
        get { smallToo < 0 ? nil : Int(smallToo) }
        set { smallToo = newValue.map { Int32(clamping: $0) } ?? -1 }
    }
    /// A record with an error keeps no byte count: the two share a slot, and no kind has both.
    @inlinable var bytes: Int? {
        get { has(Flag.hasBytes) ? Int(truncatingIfNeeded: second) : nil }
        set {
            store(
                newValue.map { UInt64(truncatingIfNeeded: $0) }, inFirst: false, flag: Flag.hasBytes,
                others: Flag.hasError)
        }
    }
    /// The error, held like the subject; set by the feed from what the emitting site gave it.
    @inlinable var errorReference: Unmanaged<DiagnosticErrorBox>? {
        get { has(Flag.hasError) ? UnsafeRawPointer(bitPattern: UInt(second)).map(Unmanaged.fromOpaque) : nil }
        set {
            store(
                newValue.map { UInt64(UInt(bitPattern: $0.toOpaque())) }, inFirst: false, flag: Flag.hasError,
                others: Flag.hasBytes)
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
        let subject = record.subjectReference?.takeUnretainedValue()
        method = subject?.method
        url = subject?.url
        location = subject?.location
        error = record.errorReference?.takeUnretainedValue().error
        if record.has(DiagnosticRecord.Flag.subjectSlots) {
            if let subject, let render = subject.render { render(subject, record, &self) }
            return
        }
        requestID = record.requestID
        attempt = record.attempt
        status = record.status
        bytes = record.bytes
        if kind == .retry { delay = record.time } else { duration = record.time }
        notModified = record.notModified
    }
}
