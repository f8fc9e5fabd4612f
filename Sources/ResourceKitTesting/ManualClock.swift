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

    private struct Watcher {
        var id: UInt64
        var condition: @Sendable ([Duration]) -> Bool
        var timeout: Duration?
        var continuation: CheckedContinuation<Result<[Duration], ManualClockTimeout>, Never>
        /// Ends the wait at its timeout; cancelled when the condition holds first.
        var timer: Task<Void, Never>?
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var watchers: [Watcher] = []
        var nextID: UInt64 = 0
        var slept: [Duration] = []

        var pending: [Duration] { sleepers.values.map { now.duration(to: $0.deadline) }.sorted() }
    }

    private let state = Locked(State())

    /// Creates a clock at offset zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }

    /// Zero: the clock moves only by ``advance(by:)``.
    public var minimumResolution: Duration { .zero }

    /// How long each pending sleep still has to go, shortest first.
    ///
    /// A sleep leaves it as soon as its deadline is reached (by ``advance(by:)``) or its task is cancelled,
    /// and ``waitForSleepers(timeout:_:)`` sees both. A `NetworkSession` keeps one timer toward its earliest
    /// deadline, so that timer may stay here after the call it was for has ended, until time reaches it.
    public var sleepers: [Duration] { state.withLock { $0.pending } }

    /// How long each sleep asked for when it began, in the order they began (sleeps that ended at once
    /// included).
    public var requestedSleeps: [Duration] { state.withLock { $0.slept } }

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
                if let outcome {
                    continuation.resume(with: outcome)
                } else {
                    notifyWatchers()
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            guard let sleeper else { return }
            sleeper.continuation.resume(throwing: CancellationError())
            // The sleep is gone: a wait for fewer sleepers may be over.
            notifyWatchers()
        }
    }

    /// Moves time forward and wakes every sleep whose deadline has come, earliest first.
    /// - Parameter duration: How far to move; a negative duration is ignored.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            if duration > .zero { state.now = state.now.advanced(by: duration) }
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
        notifyWatchers()
    }

    /// Waits until the pending sleeps (as ``sleepers`` reports them) satisfy `condition`, and returns them;
    /// fails after `timeout` instead of hanging.
    ///
    /// The timeout is real time (`ContinuousClock`), not this clock's. One that is not positive fails at once
    /// unless `condition` already holds; one above 10⁹ seconds counts as that. A call that names no `timeout`,
    /// `try await clock.waitForSleepers { … }`, waits 5 seconds.
    /// - Parameters:
    ///   - timeout: How long to wait; 5 seconds by default.
    ///   - condition: Decides from the pending sleeps, shortest first.
    /// - Returns: The pending sleeps.
    /// - Throws: ``ManualClockTimeout`` listing the pending sleeps, at the timeout or when the waiting task is
    ///   cancelled first.
    @discardableResult
    public func waitForSleepers(
        timeout: Duration = .seconds(5),
        _ condition: @escaping @Sendable ([Duration]) -> Bool
    ) async throws(ManualClockTimeout) -> [Duration] {
        try await watch(timeout: timeout, condition).get()
    }

    private func watch(
        timeout: Duration?, _ condition: @escaping @Sendable ([Duration]) -> Bool
    ) async -> Result<[Duration], ManualClockTimeout> {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Result<[Duration], ManualClockTimeout>? in
                    let pending = state.pending
                    if condition(pending) { return .success(pending) }
                    if Task.isCancelled {
                        return .failure(
                            ManualClockTimeout(timeout: timeout ?? .zero, sleepers: pending, isCancelled: true))
                    }
                    // Started under the lock, so that no change of the sleepers or cancellation can miss it.
                    let timer = timeout.map { limit in
                        Task { [self] in
                            await RealTimeLimit.sleep(for: limit)
                            endWatch(id, isCancelled: false)
                        }
                    }
                    state.watchers.append(
                        Watcher(
                            id: id, condition: condition, timeout: timeout, continuation: continuation, timer: timer))
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            endWatch(id, isCancelled: true)
        }
    }

    /// Fails the wait `id` if it is still waiting: its timeout came, or its task was cancelled.
    private func endWatch(_ id: UInt64, isCancelled: Bool) {
        let ended = state.withLock { state -> (Watcher, [Duration])? in
            guard let index = state.watchers.firstIndex(where: { $0.id == id }) else { return nil }
            return (state.watchers.remove(at: index), state.pending)
        }
        guard let (watcher, pending) = ended else { return }
        if isCancelled { watcher.timer?.cancel() }
        watcher.continuation.resume(
            returning: .failure(
                ManualClockTimeout(timeout: watcher.timeout ?? .zero, sleepers: pending, isCancelled: isCancelled)))
    }

    private func notifyWatchers() {
        let ready = state.withLock { state -> [(Watcher, [Duration])] in
            let pending = state.pending
            var ready: [(Watcher, [Duration])] = []
            state.watchers.removeAll { watcher in
                guard watcher.condition(pending) else { return false }
                ready.append((watcher, pending))
                return true
            }
            return ready
        }
        for (watcher, pending) in ready {
            watcher.timer?.cancel()
            watcher.continuation.resume(returning: .success(pending))
        }
    }
}

/// A wait on a ``ManualClock`` whose condition did not hold in time.
public struct ManualClockTimeout: Error, Sendable, Equatable, CustomStringConvertible {
    /// How long the wait was allowed to last, in real time.
    public var timeout: Duration
    /// The pending sleeps when the wait ended, shortest first.
    public var sleepers: [Duration]
    /// Whether the waiting task was cancelled before the timeout.
    public var isCancelled: Bool

    /// Creates the error a wait ends with; tests compare against it.
    /// - Parameters:
    ///   - timeout: How long the wait was allowed to last.
    ///   - sleepers: The pending sleeps when the wait ended, shortest first.
    ///   - isCancelled: Whether the waiting task was cancelled before the timeout.
    public init(timeout: Duration, sleepers: [Duration], isCancelled: Bool = false) {
        self.timeout = timeout
        self.sleepers = sleepers
        self.isCancelled = isCancelled
    }

    /// Says how the wait ended and lists the pending sleeps.
    public var description: String {
        let prefix =
            isCancelled
            ? "Cancelled while waiting for the clock's sleepers"
            : "Timed out after \(timeout) waiting for the clock's sleepers"
        return "\(prefix); \(sleepers.count) pending: \(sleepers)"
    }
}
