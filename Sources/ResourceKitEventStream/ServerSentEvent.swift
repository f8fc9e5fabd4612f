public import ResourceKitHTTP

/// One event of a server-sent event stream (`text/event-stream`), as the WHATWG HTML standard's
/// "event stream interpretation" dispatches it.
public struct ServerSentEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event's type: its last `event` field, or `"message"` when it had none (or an empty one).
    public var type: String
    /// The event's data: its `data` fields joined with `\n`.
    public var data: String
    /// The last event id when the event was dispatched: the last `id` field of this event or of an earlier one
    /// (an `id` field without a value resets it to `""`). A reconnection sends it as `Last-Event-ID`.
    public var lastEventID: String

    /// Creates an event.
    /// - Parameters:
    ///   - type: The type; `"message"` for an untyped event.
    ///   - data: The data.
    ///   - lastEventID: The last event id.
    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }

    /// The type, the id and the data, for logs and test failures.
    public var description: String {
        "\(type)(id: \"\(lastEventID)\", data: \"\(data)\")"
    }
}

/// Turns the bytes of an event stream into ``ServerSentEvent``s, exactly as the WHATWG HTML standard's event
/// stream interpretation does, in chunks split anywhere.
///
/// - A leading byte order mark is skipped; bytes that are not UTF-8 become U+FFFD.
/// - Lines end with `\r\n`, `\n` or `\r`, and a `\r\n` split between two chunks is one line end.
/// - A line starting with `:` is a comment. A field's value is what follows the first `:`, less one space
///   after it; a line without `:` is a field with an empty value.
/// - `data` lines add to the event's data, `event` sets its type, `id` the last event id (unless the value
///   holds U+0000), and `retry` (ASCII digits only) the ``retry`` delay in milliseconds. Other fields, and
///   lines that are none of these, are ignored.
/// - An empty line dispatches the event, unless it has no data. At the end of the stream an event with no
///   empty line after it is dropped: call ``finish()`` to forget it.
///
/// An event's data or a line longer than ``maximumEventSize`` bytes fails the stream with
/// `NetworkError.invalidResponse(_:)`: a server that sends no line end is not buffered without bound. The
/// events completed before it are not lost, however the stream was split: ``parse(_:)`` returns them, drops
/// what it gathered of the long line, and throws on its next call.
///
/// ```swift
/// var parser = EventStreamParser()
/// let events = try parser.parse(Data("data: hello\n\n".utf8))   // [message(id: "", data: "hello")]
/// ```
public struct EventStreamParser: Sendable {
    /// The reconnection delay the stream asked for with its last valid `retry` field, if any.
    public private(set) var retry: Duration?
    /// The last event id of the stream: set when an empty line ends a block of fields (with or without data)
    /// to the last `id` field so far. What a reconnection sends as `Last-Event-ID`.
    ///
    /// It carries over from one connection to the next (``init(lastEventID:maximumEventSize:)``, ``finish()``),
    /// as browsers' `EventSource` does: the standard's text starts each connection's id afresh, so that an
    /// event without an id after a reconnection would lose it.
    public private(set) var lastEventID: String
    /// The most bytes an event's data, or one line, may hold.
    public let maximumEventSize: Int

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var type: String?
    /// The stream's last `id` field: it becomes ``lastEventID`` when a block ends.
    private var idBuffer = ""
    /// Whether the last chunk ended with `\r`: a `\n` starting the next one ends no line.
    private var afterCR = false
    /// Whether the stream's first bytes have been checked for a byte order mark.
    private var checkedBOM = false
    /// Whether a line or an event's data grew past the bound: the stream has failed, until ``finish()``.
    private(set) var isOverLimit = false

    /// Creates a parser.
    /// - Parameters:
    ///   - lastEventID: The last event id known from an earlier connection: the id of events until the stream
    ///     sets another.
    ///   - maximumEventSize: The most bytes an event's data or one line may hold: 16 MiB by default; at least 1.
    public init(lastEventID: String = "", maximumEventSize: Int = 16 << 20) {
        self.lastEventID = lastEventID
        idBuffer = lastEventID
        self.maximumEventSize = max(1, maximumEventSize)
    }

    /// Reads a chunk of the stream.
    /// - Parameter bytes: The chunk, split from the stream anywhere.
    /// - Returns: The events the chunk completed, in order. When a line or an event's data grows past
    ///   ``maximumEventSize`` after some of them, they are returned and the next call throws.
    /// - Throws: `NetworkError.invalidResponse(_:)` when a line or an event's data grows past
    ///   ``maximumEventSize`` and the chunk completed no event before it, or on the call after one that did.
    public mutating func parse(_ bytes: some Sequence<UInt8>) throws(NetworkError) -> [ServerSentEvent] {
        guard !isOverLimit else { throw overLimit }
        var events: [ServerSentEvent] = []
        let handled: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            events = parseBuffer(buffer)
        }
        if handled == nil {
            let copy = Array(bytes)
            events = copy.withUnsafeBufferPointer { parseBuffer($0) }
        }
        guard !isOverLimit || !events.isEmpty else { throw overLimit }
        return events
    }

    private var overLimit: NetworkError {
        .invalidResponse("an event of the stream is longer than \(maximumEventSize) bytes")
    }

    /// Ends the stream: an event without an empty line after it is dropped, as the standard says, and so is an
    /// `id` field no empty line ended. The parser can then read the stream of a new connection; ``lastEventID``
    /// and ``retry`` stay, for that reconnection.
    public mutating func finish() {
        idBuffer = lastEventID
        line.removeAll(keepingCapacity: false)
        data.removeAll(keepingCapacity: false)
        hasData = false
        type = nil
        afterCR = false
        checkedBOM = false
        isOverLimit = false
    }

    private mutating func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        var start = 0
        var index = 0
        let count = buffer.count
        if afterCR, count > 0 {
            afterCR = false
            if buffer[0] == 0x0A {
                start = 1
                index = 1
            }
        }
        while index < count {
            let byte = buffer[index]
            guard byte == 0x0A || byte == 0x0D else {
                index += 1
                continue
            }
            line.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<index]))
            if line.count > maximumEventSize { return failOverLimit(events) }
            if let event = endLine() { events.append(event) }
            index += 1
            if byte == 0x0D {
                if index < count {
                    if buffer[index] == 0x0A { index += 1 }
                } else {
                    afterCR = true
                }
            }
            start = index
            if data.count > maximumEventSize { return failOverLimit(events) }
        }
        if start < count { line.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<count])) }
        if line.count > maximumEventSize { return failOverLimit(events) }
        return events
    }

    /// A line or an event's data passed the bound: what was gathered goes, and the stream has failed; the events
    /// completed before it are still the caller's.
    private mutating func failOverLimit(_ events: [ServerSentEvent]) -> [ServerSentEvent] {
        isOverLimit = true
        line = []
        data = []
        hasData = false
        type = nil
        return events
    }

    /// Interprets the line gathered in `line`, then empties it; returns the event an empty line dispatches.
    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: line.count <= 4_096) }
        if !checkedBOM {
            checkedBOM = true
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard !line.isEmpty else { return dispatch() }
        if line[0] == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let fieldEnd = colon ?? line.count
        var valueStart = colon.map { $0 + 1 } ?? line.count
        if valueStart < line.count, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let field = line[..<fieldEnd]
        let value = line[valueStart...]
        if field.elementsEqual("data".utf8) {
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        } else if field.elementsEqual("event".utf8) {
            type = String(decoding: value, as: UTF8.self)
        } else if field.elementsEqual("id".utf8) {
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        } else if field.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                // Digits past what a duration holds (about 292 million years) count as the longest delay.
                var milliseconds: Int64 = 0
                for digit in value {
                    let (times, overflow) = milliseconds.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
                    guard !overflow, !overflow2 else {
                        milliseconds = .max
                        break
                    }
                    milliseconds = sum
                }
                retry = .milliseconds(milliseconds)
            }
        }
        return nil
    }

    /// The event an empty line ends: none when it has no data. Its buffers start again either way.
    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = idBuffer
        defer {
            data.removeAll(keepingCapacity: data.count <= 4_096)
            hasData = false
            type = nil
        }
        guard hasData else { return nil }
        let type = self.type.flatMap { $0.isEmpty ? nil : $0 } ?? "message"
        return ServerSentEvent(type: type, data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID)
    }
}
