public import ResourceKitHTTP

/// What a stream of server-sent events is doing, for an app that shows it: "live", "reconnecting in 5 s",
/// "offline". See ``ResourceKitHTTP/NetworkSession/events(_:lastEventID:reconnect:maximumEventSize:onOpen:onStatus:)``.
///
/// A struct with a ``kind`` to switch over, so that a later release can add kinds without breaking your code:
///
/// ```swift
/// let events = session.events(Endpoint(.get, "stream"), onStatus: { status in
///     switch status.kind {
///     case .opened: show("live")
///     case .reconnecting: show("reconnecting in \(status.delay ?? .zero)")
///     case .finished where status.error != nil: show("offline")
///     default: break
///     }
/// })
/// ```
public struct EventStreamStatus: Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's name: `opened`, `closed`, `reconnecting` or `finished`.
        public let name: String
        init(_ name: String) { self.name = name }

        /// A connection opened: its head was accepted, and events may follow.
        public static let opened = Kind("opened")
        /// The open connection ended: its body ended (``EventStreamStatus/error`` is `nil`) or failed.
        public static let closed = Kind("closed")
        /// The stream waits ``EventStreamStatus/delay`` before its next connection attempt.
        public static let reconnecting = Kind("reconnecting")
        /// The stream ended for good: the server said stop (`204`, no error), it failed, the reading task was
        /// cancelled (`NetworkError.cancelled`), or the policy's attempts ran out. Nothing follows.
        public static let finished = Kind("finished")

        /// The kind's name.
        public var description: String { name }
    }

    /// What happened.
    public let kind: Kind
    /// The number of the connection that opened or closed (1 for the first); for ``Kind/reconnecting`` and
    /// ``Kind/finished``, the number of connections opened so far.
    public let connection: Int
    /// For ``Kind/reconnecting``: how long the stream waits before its next attempt.
    public let delay: Duration?
    /// Connection attempts in a row that failed (did not open, or ended before an event): what the wait grew
    /// with, and what ``ReconnectPolicy/maximumAttempts`` bounds.
    public let failures: Int
    /// What closed the connection, or ended the stream, or made the attempt fail; `nil` for an end of body
    /// or the server's `204`.
    public let error: NetworkError?

    /// Creates a status, for tests of code that shows one.
    /// - Parameters:
    ///   - kind: What happened.
    ///   - connection: The connection's number.
    ///   - delay: The wait before the next attempt, for ``Kind/reconnecting``.
    ///   - failures: Failed attempts in a row.
    ///   - error: What ended the connection, the attempt or the stream.
    public init(kind: Kind, connection: Int, delay: Duration? = nil, failures: Int = 0, error: NetworkError? = nil) {
        self.kind = kind
        self.connection = connection
        self.delay = delay
        self.failures = failures
        self.error = error
    }

    /// As in `reconnecting(connection: 1, delay: 2.0 seconds, failures: 1, error: The request timed out)`.
    public var description: String {
        var parts = ["connection: \(connection)"]
        if let delay { parts.append("delay: \(delay)") }
        if failures > 0 { parts.append("failures: \(failures)") }
        if let error { parts.append("error: \(error)") }
        return "\(kind)(\(parts.joined(separator: ", ")))"
    }
}
