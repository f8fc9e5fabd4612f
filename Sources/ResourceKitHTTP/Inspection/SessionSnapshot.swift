import Foundation

/// A picture of a session at one moment: its calls in flight. ``NetworkSession/snapshot()`` takes it.
///
/// `Codable`, so that a tool can read it as JSON. URLs are redacted like the logs.
public struct SessionSnapshot: Sendable, Equatable, Codable {
    /// The session's calls in flight, oldest first.
    public var requests: [RequestSnapshot]

    /// Creates a snapshot.
    /// - Parameter requests: The calls in flight.
    public init(requests: [RequestSnapshot]) { self.requests = requests }
}

/// One call of a session in flight.
public struct RequestSnapshot: Sendable, Equatable, Codable {
    /// The call's id, as `DiagnosticEvent.requestID` gives it.
    public var id: UInt64
    /// The method.
    public var method: String
    /// The URL, redacted.
    public var url: String
    /// How long ago the call started (on the session's clock).
    public var elapsed: Duration
    /// The attempt in flight (1 for the first; higher after retries).
    public var attempt: Int
    /// How many callers share the call: the callers of the resource or list operation that sent it, when a
    /// store's snapshot can tell (`ResourceStore.snapshot()`, in ResourceKit); 1 otherwise.
    public var callers: Int

    /// Creates a request snapshot.
    /// - Parameters:
    ///   - id: The call's id.
    ///   - method: The method.
    ///   - url: The URL, redacted.
    ///   - elapsed: How long ago it started.
    ///   - attempt: The attempt in flight.
    ///   - callers: How many callers share it.
    public init(id: UInt64, method: String, url: String, elapsed: Duration, attempt: Int, callers: Int) {
        self.id = id
        self.method = method
        self.url = url
        self.elapsed = elapsed
        self.attempt = attempt
        self.callers = callers
    }
}

extension NetworkSession {
    /// The session's calls in flight now: cheap (one lock), and `Codable`.
    /// - Returns: The snapshot.
    public nonisolated func snapshot() -> SessionSnapshot {
        snapshot(callers: [:])
    }

    /// The snapshot, each call's callers read from `callers`, a count for each calling task's hash (what a store's
    /// snapshot knows of its objects' operations).
    package nonisolated func snapshot(callers: [Int: Int]) -> SessionSnapshot {
        let now = timeline.now
        return SessionSnapshot(
            requests: inFlight.current.map { id, entry in
                RequestSnapshot(
                    id: id, method: entry.method, url: configuration.redaction.redact(entry.url),
                    elapsed: now - entry.startedAt, attempt: entry.attempt,
                    callers: entry.task.flatMap { callers[$0] } ?? 1)
            })
    }
}
