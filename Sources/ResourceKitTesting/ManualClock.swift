import ResourceKit

/// A clock that moves only when a test advances it, so retries, backoff and deadlines run without waiting.
///
/// Give it to a `NetworkSession` as its `clock`: every wait between retries and every request
/// deadline then sleeps on it. A test waits until the session sleeps, reads how long it asked to sleep, and
/// moves time forward:
///
/// ```swift
/// let clock = ManualClock()
/// let session = NetworkSession(baseURL: "https://api.test", transport: stub, retry: policy, clock: clock)
/// async let post: Post = session.send(Endpoint(.get, "posts/1"))
/// let waits = try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.milliseconds(500)) }
/// clock.advance(by: .milliseconds(500))
/// ```
public final class ManualClock: Clock, Sendable {
    /// A point in the clock's time: how far it was advanced.
    public struct Instant: InstantProtocol, Hashable, Sendable {
        /// Time since the clock was made.
        public var offset: Duration

        /// Creates an instant.
        /// - Parameter offset: Time since the clock was made.
        public init(offset: Duration) { self.offset = offset }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }

        /// Whether `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        var slept: [Duration] = []

        var pending: [Duration] { sleepers.values.map { now.duration(to: $0.deadline) }.sorted() }
    }

    private let state = Awaitable(State())

    /// Creates a clock at offset zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.read { $0.now } }

    /// Zero: the clock moves only by ``advance(by:)``.
    public var minimumResolution: Duration { .zero }

    /// How long each pending sleep still has to go, shortest first.
    ///
    /// A sleep leaves it as soon as its deadline is reached (by ``advance(by:)``) or its task is cancelled,
    /// and ``waitForSleepers(timeout:_:)`` sees both. A `NetworkSession` keeps one timer toward its earliest
    /// deadline, so that timer may stay here after the call it was for has ended, until time reaches it.
    public var sleepers: [Duration] { state.read { $0.pending } }

    /// How long each sleep asked for when it began, in the order they began (sleeps that ended at once
    /// included).
    public var requestedSleeps: [Duration] { state.read { $0.slept } }

    /// Suspends until the clock is advanced to `deadline`.
    /// - Throws: `CancellationError` when the sleeping task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    state.slept.append(state.now.duration(to: deadline))
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                // A new sleeper re-checked the waits (`Awaitable.withLock`).
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            guard let sleeper else { return }
            // The sleep is gone, and the waits for fewer sleepers were re-checked.
            sleeper.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleep whose deadline has come, earliest first.
    /// - Parameter duration: How far to move; a negative duration is ignored, and one above 10⁹ seconds (about
    ///   31 years) moves 10⁹ seconds, so that no sum of instants can overflow.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            if duration > .zero { state.now = state.now.advanced(by: min(duration, RealTimeLimit.longest)) }
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits until the pending sleeps (as ``sleepers`` reports them) satisfy `condition`, and returns them;
    /// fails after `timeout` instead of hanging.
    ///
    /// The timeout is real time (`ContinuousClock`), not this clock's. One that is not positive fails at once
    /// unless `condition` already holds; one above 10⁹ seconds counts as that. A call that names no `timeout`,
    /// `try await clock.waitForSleepers { … }`, waits 5 seconds.
    /// - Parameters:
    ///   - timeout: How long to wait; 5 seconds by default.
    ///   - condition: Decides from the pending sleeps, shortest first. It runs under the clock's lock: it must
    ///     not use the clock itself (its `sleepers`, `now`, `advance`), which would never return; everything it
    ///     needs is its argument.
    /// - Returns: The pending sleeps.
    /// - Throws: ``WaitTimeout`` (`timedOut` or `cancelled`) whose ``WaitTimeout/seen`` lists the pending
    ///   sleeps, at the timeout or when the waiting task is cancelled first.
    @discardableResult
    public func waitForSleepers(
        timeout: Duration = .seconds(5),
        _ condition: @escaping @Sendable ([Duration]) -> Bool
    ) async throws(WaitTimeout) -> [Duration] {
        try await state.wait(
            for: "the clock's sleepers", timeout: timeout, seen: { $0.pending.map { "\($0)" } },
            until: { condition($0.pending) }
        ).get().pending
    }
}
