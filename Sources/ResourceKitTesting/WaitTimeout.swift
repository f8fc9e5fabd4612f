/// A wait of the testing kit that ended before what it waited for: ``StubTransport/waitForRequests(_:timeout:)``,
/// ``ManualClock/waitForSleepers(timeout:_:)``, and ``StateRecorder``'s ``StateRecorder/wait(timeout:for:until:)``,
/// ``StateRecorder/waitForCount(_:timeout:)`` and ``StateRecorder/expect(_:timeout:)``.
///
/// Every wait of the kit ends this way instead of hanging, with what it saw: the requests that arrived, the
/// clock's pending sleeps, or the states recorded.
///
/// ```swift
/// do {
///     try await stub.waitForRequests(2, timeout: .seconds(1))
/// } catch {
///     print(error.reason, error.seen)  // timedOut ["GET https://api.test/posts/1"]
/// }
/// ```
public struct WaitTimeout: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why a wait ended before what it waited for, in a set that may grow.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// The reason's stable name.
        public let name: String

        private init(_ name: String) { self.name = name }

        /// Its timeout, in real time (`ContinuousClock`), passed.
        public static let timedOut = Reason("timedOut")
        /// The waiting task was cancelled first.
        public static let cancelled = Reason("cancelled")
        /// What it watched ended first: a ``StateRecorder``'s stream finished (its resource was released, or
        /// ``StateRecorder/stop()`` was called).
        public static let finished = Reason("finished")
        /// What it waited for arrived and differs from what was expected (``StateRecorder/expect(_:timeout:)``).
        public static let mismatched = Reason("mismatched")

        /// The reason's name.
        public var description: String { name }
    }

    /// What the wait was for, such as `2 request(s)`, `the clock's sleepers` or the states expected.
    public var awaited: String
    /// Why it ended.
    public var reason: Reason
    /// How long the wait was allowed to last, in real time.
    public var timeout: Duration
    /// What it saw when it ended, described: the requests that had arrived (as `METHOD URL`, in order), the
    /// clock's pending sleeps (shortest first), or the states recorded (in order).
    public var seen: [String]

    /// Creates the error a wait ends with; tests compare against it.
    /// - Parameters:
    ///   - awaited: What the wait was for.
    ///   - reason: Why it ended.
    ///   - timeout: How long the wait was allowed to last.
    ///   - seen: What it saw when it ended, described.
    public init(awaited: String, reason: Reason, timeout: Duration, seen: [String]) {
        self.awaited = awaited
        self.reason = reason
        self.timeout = timeout
        self.seen = seen
    }

    /// Says how the wait ended and lists what it saw.
    public var description: String {
        let prefix =
            switch reason {
            case .cancelled: "Cancelled while waiting for \(awaited)"
            case .finished: "The stream finished before \(awaited)"
            case .mismatched: "What arrived differs from \(awaited)"
            default: "Timed out after \(timeout) waiting for \(awaited)"
            }
        return "\(prefix); saw \(seen.count): [\(seen.joined(separator: ", "))]"
    }
}
