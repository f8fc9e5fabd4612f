import Foundation
public import ResourceKitHTTP

/// When a stream of server-sent events connects again after its connection ended or failed.
///
/// The wait before a reconnection is the stream's reconnection time: the server's last `retry` field, or
/// ``initialDelay`` until it sent one. That is the wait after a connection that delivered events, and after
/// the first attempt in a row that failed (did not open, or ended before any event; then at least 100 ms);
/// each further failed attempt multiplies it by ``multiplier``, up to ``maximumDelay`` (or the server's
/// `retry`, if that is longer). ``jitter`` then lengthens the wait by up to half (a draw of its source times
/// half the wait: not the "full jitter" of `RetryPolicy`, which may shorten it), so that clients cut off
/// together do not come back together; the wait is never shorter than the server asked.
///
/// Bad values never trap: a multiplier below 1 or NaN counts as 1, a negative delay as zero, a negative
/// ``maximumAttempts`` as zero.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The reconnection time until the server sends a `retry` field.
    public var initialDelay: Duration
    /// How much longer each failed attempt in a row after the first makes the next wait.
    public var multiplier: Double
    /// The longest wait, before jitter, unless the server's `retry` or ``initialDelay`` asks for longer (the
    /// first wait is never shorter than either).
    public var maximumDelay: Duration
    /// How the wait is lengthened at random: `RetryPolicy.Jitter.none` waits exactly the computed delay.
    public var jitter: RetryPolicy.Jitter
    /// How many connection attempts in a row may fail before the stream ends with the last error; `nil`
    /// retries for as long as the stream is read.
    public var maximumAttempts: Int?

    /// Creates a policy.
    /// - Parameters:
    ///   - initialDelay: The reconnection time until the server sends `retry`.
    ///   - multiplier: How much longer each failed attempt in a row makes the next wait.
    ///   - maximumDelay: The longest wait before jitter, unless the server's `retry` or `initialDelay` is longer.
    ///   - jitter: How the wait is lengthened at random, by up to half.
    ///   - maximumAttempts: Failed attempts in a row before the stream ends; `nil` for no limit.
    public init(
        initialDelay: Duration = .seconds(3), multiplier: Double = 2, maximumDelay: Duration = .seconds(60),
        jitter: RetryPolicy.Jitter = .full, maximumAttempts: Int? = nil
    ) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.maximumAttempts = maximumAttempts
    }

    /// Reconnects after 3 s (or the server's `retry`), doubling per failed attempt up to 60 s, with jitter,
    /// for as long as the stream is read.
    public static let standard = ReconnectPolicy()
    /// Never reconnects: the stream ends when its connection does.
    public static let never = ReconnectPolicy(maximumAttempts: 0)

    /// The wait before a connection attempt that follows `failures` failed attempts in a row, for the
    /// reconnection time `base`.
    package func wait(afterFailures failures: Int, base: Duration) -> Duration {
        // After a failed attempt, at least 100 ms before backing off, so that a `retry: 0` (or a zero delay)
        // never reconnects in a loop against a server that is down.
        let base = failures > 0 ? max(base, .milliseconds(100)) : max(base, .zero)
        guard
            let seconds = Backoff.seconds(
                initial: base, multiplier: multiplier, exponent: failures - 1, ceiling: max(maximumDelay, base))
        else { return .zero }
        return jitter.lengthening(seconds: seconds, byUpToOneIn: 2)
    }

    /// Whether another attempt may follow `failures` failed attempts in a row.
    package func allowsAttempt(afterFailures failures: Int) -> Bool {
        guard let maximumAttempts else { return true }
        return failures < max(maximumAttempts, 0)
    }
}

extension NetworkSession {
    /// Reads the endpoint as a stream of server-sent events (`text/event-stream`), connecting again as the
    /// WHATWG `EventSource` does.
    ///
    /// ```swift
    /// for try await event in session.events(Endpoint(.get, "realtime")) {
    ///     print(event.type, event.data)
    /// }
    /// ```
    ///
    /// Each connection is a `bytes(_:)` request (with the session's retry policy replaced by `.never`, unless
    /// the endpoint sets one: `reconnect` retries), so credentials, adapters, redirects, validation and the
    /// time limit (until the head) apply to it. It sends `Accept: text/event-stream`, `Cache-Control:
    /// no-store`, and `Last-Event-ID` once an event id is known. Nothing is sent until the first `next()`.
    ///
    /// - The stream connects again, after the wait of `reconnect`, when its connection ends, when the body
    ///   fails, when the transport fails (`NetworkError.Code.transport` or `NetworkError.Code.timeout`),
    ///   and on a status of 408, 429, 500, 502, 503 or 504. An event split by a lost connection is dropped, as
    ///   the standard says.
    /// - It ends, with no reconnection, on a `204 No Content` (the server's way to say "stop"), and fails on
    ///   any other status, on a content type other than `text/event-stream`, on an event larger than
    ///   `maximumEventSize`, or once `reconnect`'s ``ReconnectPolicy/maximumAttempts`` attempts in a row
    ///   failed.
    /// - Cancelling the reading task ends it at once with `NetworkError.cancelled`, waiting or reading, and
    ///   nothing connects after that. Waits use the session's `clock`.
    /// - What the connection does is told to `onStatus`, on the reading task, before the stream goes on: each
    ///   connection that opens (``EventStreamStatus/Kind/opened``) and closes (``EventStreamStatus/Kind/closed``,
    ///   with its error, if any), each wait before another attempt (``EventStreamStatus/Kind/reconnecting``, with
    ///   the wait and the error of the attempt that failed), and the end of the stream
    ///   (``EventStreamStatus/Kind/finished``, with its error, if any). A connection that never opened has no
    ///   `closed`; nothing is told once the reader stops reading.
    ///
    /// - Parameters:
    ///   - endpoint: The stream's endpoint.
    ///   - lastEventID: The last event id from an earlier stream, sent with the first connection; `""` for none.
    ///   - reconnect: When to connect again.
    ///   - maximumEventSize: The most bytes an event's data, or a line, may hold.
    ///   - onOpen: Called each time a connection opens, with its number (1 for the first): a gap in the events
    ///     before a connection other than the first is where a client resynchronizes.
    ///   - onStatus: Called with each change of the connection: what an app shows of it.
    /// - Returns: The events.
    public nonisolated func events(
        _ endpoint: Endpoint, lastEventID: String = "", reconnect: ReconnectPolicy = .standard,
        maximumEventSize: Int = 16 << 20, onOpen: (@Sendable (Int) -> Void)? = nil,
        onStatus: (@Sendable (EventStreamStatus) -> Void)? = nil
    ) -> ServerSentEvents {
        ServerSentEvents(
            session: self, endpoint: endpoint, lastEventID: lastEventID, reconnect: reconnect,
            maximumEventSize: maximumEventSize, onOpen: onOpen, onStatus: onStatus)
    }
}

/// The events of a server-sent event stream: see ``ResourceKitHTTP/NetworkSession/events(_:lastEventID:reconnect:maximumEventSize:onOpen:onStatus:)``.
///
/// Each iterator is its own stream, with its own connections.
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent
    /// What ends the stream early.
    public typealias Failure = NetworkError

    let session: NetworkSession
    let endpoint: Endpoint
    let lastEventID: String
    let reconnect: ReconnectPolicy
    let maximumEventSize: Int
    let onOpen: (@Sendable (Int) -> Void)?
    let onStatus: (@Sendable (EventStreamStatus) -> Void)?

    /// Makes the iterator; it connects on its first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            stream: self,
            parser: EventStreamParser(lastEventID: lastEventID, maximumEventSize: maximumEventSize))
    }

    /// Reads the events in order, connecting as needed.
    public struct Iterator: AsyncIteratorProtocol {
        let stream: ServerSentEvents
        var parser: EventStreamParser
        var pending: [ServerSentEvent] = []
        var nextPending = 0
        var body: ResponseBody.Iterator?
        var bodyToCancel: ResponseBody?
        var connections = 0
        /// Connection attempts in a row that did not open, or opened and ended before an event.
        var failures = 0
        /// Whether the current connection has delivered an event.
        var hasEvents = false
        /// Whether the stream ended for good.
        var isFinished = false
        /// Whether `onStatus` was told so.
        var toldFinished = false

        /// The next event, connecting or reconnecting as needed; `nil` once the server said to stop (`204`).
        /// - Throws: `NetworkError`: see ``ResourceKitHTTP/NetworkSession/events(_:lastEventID:reconnect:maximumEventSize:onOpen:onStatus:)``.
        public mutating func next() async throws(NetworkError) -> ServerSentEvent? {
            try await next(isolation: nil)
        }

        /// The next event, for an isolated caller.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError)
            -> ServerSentEvent?
        {
            while true {
                // Cancelled: at once, even with events of the last chunk still to hand out.
                if nextPending < pending.count, !Task.isCancelled {
                    defer { nextPending += 1 }
                    return pending[nextPending]
                }
                pending.removeAll(keepingCapacity: true)
                nextPending = 0
                guard !isFinished else { return nil }
                do throws(NetworkError) {
                    guard !Task.isCancelled else { throw .cancelled }
                    if body == nil {
                        try await connect(isolation: actor)
                        continue
                    }
                    // The events before a line over the bound have been delivered: now the stream fails.
                    if parser.isOverLimit { _ = try parser.parse(EmptyCollection()) }
                    if let chunk = try await body?.next(isolation: actor) {
                        pending = try parser.parse(chunk)
                        // Nothing more of this connection will be used: it closes now, not after the events.
                        if parser.isOverLimit { bodyToCancel?.cancel() }
                        if !pending.isEmpty, !hasEvents {
                            hasEvents = true
                            failures = 0
                        }
                    } else {
                        try await endConnection(nil, isolation: actor)
                    }
                } catch {
                    try await endConnection(error, isolation: actor)
                }
            }
        }

        /// Opens a connection, after the wait its turn calls for; a head that cannot open fails the attempt.
        private mutating func connect(isolation actor: isolated (any Actor)?) async throws(NetworkError) {
            var endpoint = stream.endpoint
            // The reconnection policy does the retrying; the session's retry policy, on top, would stack its
            // backoff on each attempt's (an endpoint that sets its own keeps it).
            if endpoint.retry == nil { endpoint.retry = .never }
            endpoint =
                endpoint
                .setting(header: "Accept", to: "text/event-stream")
                .setting(header: "Cache-Control", to: "no-store")
            if !parser.lastEventID.isEmpty {
                endpoint = endpoint.setting(header: "Last-Event-ID", to: parser.lastEventID)
            }
            let response = try await stream.session.bytes(endpoint)
            if response.statusCode == 204 {
                response.body.cancel()
                isFinished = true
                tellFinished(nil)
                return
            }
            let type = response.headers["Content-Type"]?.split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "text/event-stream" else {
                response.body.cancel()
                isFinished = true
                throw .invalidResponse(
                    "the event stream's content type is \(response.headers["Content-Type"].map { "\"\($0)\"" } ?? "missing"), not text/event-stream"
                )
            }
            body = response.body.makeAsyncIterator()
            bodyToCancel = response.body
            hasEvents = false
            connections += 1
            stream.onOpen?(connections)
            stream.onStatus?(EventStreamStatus(kind: .opened, connection: connections, failures: failures))
        }

        /// Tells `onStatus` that the stream ended for good, with `error`, if any: once, though an error that
        /// ends the stream passes through `endConnection` a second time on its way out.
        private mutating func tellFinished(_ error: NetworkError?) {
            guard !toldFinished else { return }
            toldFinished = true
            stream.onStatus?(
                EventStreamStatus(kind: .finished, connection: connections, failures: failures, error: error))
        }

        /// Ends the current connection (or attempt) with `error`, or at the end of its body for `nil`, then
        /// either waits for the next attempt or rethrows what ends the stream.
        private mutating func endConnection(
            _ error: NetworkError?, isolation actor: isolated (any Actor)?
        ) async throws(NetworkError) {
            let wasOpen = body != nil
            bodyToCancel?.cancel()
            body = nil
            bodyToCancel = nil
            parser.finish()
            if wasOpen {
                stream.onStatus?(
                    EventStreamStatus(kind: .closed, connection: connections, failures: failures, error: error))
            }
            guard !isFinished else {
                tellFinished(error)
                if let error { throw error }
                return
            }
            if let error {
                guard Self.reconnects(after: error), !Task.isCancelled else {
                    isFinished = true
                    let final: NetworkError = Task.isCancelled ? .cancelled : error
                    tellFinished(final)
                    throw final
                }
            }
            // A connection that ended before any event counts as a failed attempt: a server that accepts and
            // hangs up at once is backed off from, not reconnected to in a loop.
            if !wasOpen || !hasEvents { failures += 1 }
            guard stream.reconnect.allowsAttempt(afterFailures: failures) else {
                isFinished = true
                tellFinished(error)
                if let error { throw error }
                return
            }
            let base = parser.retry ?? stream.reconnect.initialDelay
            let wait = stream.reconnect.wait(afterFailures: failures, base: base)
            stream.onStatus?(
                EventStreamStatus(
                    kind: .reconnecting, connection: connections, delay: wait, failures: failures, error: error))
            do {
                try await stream.session.sleep(for: wait)
            } catch {
                isFinished = true
                tellFinished(.cancelled)
                throw .cancelled
            }
        }

        /// Whether an error leaves the stream worth connecting again.
        static func reconnects(after error: NetworkError) -> Bool {
            switch error.code {
            case .transport, .timeout: true
            // A body cut short is a connection lost midway, whatever the platform calls it.
            case .invalidResponse: error.message.hasPrefix(URLSessionTransport.truncatedBodyMessage)
            // By the status, whatever error the validation provider made of it (`PocketBaseValidation` makes a
            // `.server` of PocketBase's own 429 and 500).
            default: [408, 429, 500, 502, 503, 504].contains(error.statusCode ?? 0)
            }
        }
    }
}
