public import ResourceKitHTTP

// The events of resources, lists and the store: kinds and properties of `DiagnosticEvent` that ResourceKit adds
// to the HTTP layer's, as a module adds codes to `NetworkError`. They flow through the session's feed and logger
// like a request's, as records whose slots this file names.

extension DiagnosticEvent.Kind {
    /// A resource or list changed state: ``DiagnosticEvent/object``, ``DiagnosticEvent/stateSummary``,
    /// ``DiagnosticEvent/previousStateSummary``.
    public static let stateChanged = DiagnosticEvent.Kind("stateChanged", level: .debug)
    /// A read was answered from memory, without a request (``ReadPolicy/skipIfLoaded``,
    /// ``ReadPolicy/skipIfFresh``, or ``ReadPolicy/staleWhileRevalidate`` before its read), or a list's next page
    /// was asked for at the end of the list: ``DiagnosticEvent/object``.
    public static let cacheHit = DiagnosticEvent.Kind("cacheHit", level: .debug)
    /// A caller joined an operation already in flight on the object instead of sending a request:
    /// ``DiagnosticEvent/object``, and ``DiagnosticEvent/callers``, how many callers waited on the object right
    /// after this one joined. The event is emitted after the join, so two callers joining at the same moment
    /// may be reported in either order, each with its own count. A change queued behind another (a second
    /// update while one is sent) joins nothing: it sends its own request in turn, and is not reported.
    public static let joined = DiagnosticEvent.Kind("joined", level: .debug)
    /// An operation of the object ended and answered ``DiagnosticEvent/callers`` callers at once: more than one
    /// when reads were coalesced.
    public static let operationFinished = DiagnosticEvent.Kind("operationFinished", level: .debug)
    /// A holder in a ``ResourceStore`` learnt about items and the store told the other live holders:
    /// ``DiagnosticEvent/object`` (the holder that learnt), ``DiagnosticEvent/itemType``,
    /// ``DiagnosticEvent/itemCount`` and ``DiagnosticEvent/receivers`` (how many other holders heard it).
    public static let storeNews = DiagnosticEvent.Kind("storeNews", level: .debug)
}

extension DiagnosticEvent {
    /// The resource or list, as in `Resource<RemotePost> posts/42` or `ListResource<RemoteFeed>`.
    public var object: String? {
        get { details[text: ObjectEventSlots.object] }
        set { setDetail(text: ObjectEventSlots.object, newValue) }
    }
    /// The new state's case: `idle`, `loading`, `available`, `failure(timeout)`; a list's adds its item count.
    public var stateSummary: String? {
        get { details[text: ObjectEventSlots.state] }
        set { setDetail(text: ObjectEventSlots.state, newValue) }
    }
    /// The previous state's case.
    public var previousStateSummary: String? {
        get { details[text: ObjectEventSlots.previousState] }
        set { setDetail(text: ObjectEventSlots.previousState, newValue) }
    }
    /// The item type of store news.
    public var itemType: String? {
        get { details[text: ObjectEventSlots.itemType] }
        set { setDetail(text: ObjectEventSlots.itemType, newValue) }
    }
    /// How many callers wait on, or were answered by, the object.
    public var callers: Int? {
        get { details[count: ObjectEventSlots.callers] }
        set { setDetail(count: ObjectEventSlots.callers, newValue) }
    }
    /// How many other holders heard store news.
    public var receivers: Int? {
        get { details[count: ObjectEventSlots.receivers] }
        set { setDetail(count: ObjectEventSlots.receivers, newValue) }
    }
    /// How many items store news was about.
    public var itemCount: Int? {
        get { details[count: ObjectEventSlots.itemCount] }
        set { setDetail(count: ObjectEventSlots.itemCount, newValue) }
    }

    private mutating func setDetail(text slot: Int, _ value: String?) {
        details[text: slot] = value
        details.describe = ObjectEventSlots.describe
    }

    private mutating func setDetail(count slot: Int, _ value: Int?) {
        details[count: slot] = value
        details.describe = ObjectEventSlots.describe
    }
}

/// Which of an event's detail slots holds what, how an event's summary shows them, and how a record of an
/// object's event becomes an event.
@usableFromInline enum ObjectEventSlots {
    static let object = 0
    static let state = 1
    static let previousState = 2
    static let itemType = 3
    static let callers = 0
    static let receivers = 1
    static let itemCount = 2

    /// The parts of an event's one-line summary: `Resource<RemotePost> posts/42 · loading → available ·
    /// 2 callers`.
    @Sendable static func describe(_ event: DiagnosticEvent) -> [String] {
        var parts: [String] = []
        if let object = event.object { parts.append(object) }
        if let previous = event.previousStateSummary, let state = event.stateSummary {
            parts.append("\(previous) → \(state)")
        }
        if let callers = event.callers { parts.append("\(callers) callers") }
        if let itemType = event.itemType, let itemCount = event.itemCount { parts.append("\(itemCount) \(itemType)") }
        if let receivers = event.receivers { parts.append("\(receivers) receivers") }
        return parts
    }

    /// Fills an object's event from its record (``DiagnosticRecord/objectEvent(_:)``): the subject's names, and
    /// the slots the kind writes: a state change's states in `first` (after) and `second` (before), a count in
    /// `small`, store news' receivers in `smallToo`.
    @usableFromInline @Sendable static func render(
        _ subject: DiagnosticSubject, _ record: DiagnosticRecord, _ event: inout DiagnosticEvent
    ) {
        event.object = subject.name
        if let detail = subject.detail { event.itemType = detail }
        if event.kind == .stateChanged {
            event.stateSummary = DiagnosticState(packed: record.first).summary
            event.previousStateSummary = DiagnosticState(packed: record.second).summary
        } else if event.kind == .storeNews {
            event.itemCount = record.small >= 0 ? Int(record.small) : nil
            event.receivers = record.smallToo >= 0 ? Int(record.smallToo) : nil
        } else if record.small >= 0 {
            event.callers = Int(record.small)
        }
    }
}

extension DiagnosticSubject {
    /// The subject of an object's events, or of store news about items of type `itemType`.
    @inlinable static func object(_ name: String?, itemType: String? = nil) -> DiagnosticSubject {
        DiagnosticSubject(name: name, detail: itemType, render: ObjectEventSlots.render)
    }
}

extension DiagnosticRecord {
    /// A record of an object's event, for ``ObjectEventSlots/render(_:_:_:)``.
    @inlinable static func objectEvent(_ kind: DiagnosticEvent.Kind) -> DiagnosticRecord {
        DiagnosticRecord(subjectKind: kind)
    }

    /// A state change's states.
    @inlinable mutating func setStates(from before: DiagnosticState, to after: DiagnosticState) {
        first = after.packed
        second = before.packed
    }

    /// Callers, or store news' item count.
    @inlinable mutating func setCount(_ count: Int) { small = Int32(clamping: count) }

    /// Store news' receivers.
    @inlinable mutating func setReceivers(_ receivers: Int) { smallToo = Int32(clamping: receivers) }
}

/// A state as events describe it: its case, a list's item count and whether a next page loads. Never a
/// value; the text of `DiagnosticEvent.stateSummary` is made from it by the consumer.
@usableFromInline struct DiagnosticState: Sendable, BitwiseCopyable, Equatable {
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
    var summary: String {
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
