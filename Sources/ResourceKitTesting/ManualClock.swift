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
/// let waits = await clock.waitForSleepers { $0.contains(.milliseconds(500)) }
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
        var continuation: CheckedContinuation<[Duration], Never>
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
            sleeper?.continuation.resume(throwing: CancellationError())
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

    /// Waits until the pending sleeps (as ``sleepers`` reports them) satisfy `condition`, and returns them.
    ///
    /// When the waiting task is cancelled first (by a test's time limit, for example), it returns the
    /// pending sleeps as they are, whether or not they satisfy `condition`.
    /// - Parameter condition: Decides from the pending sleeps, shortest first.
    /// - Returns: The pending sleeps.
    @discardableResult
    public func waitForSleepers(_ condition: @escaping @Sendable ([Duration]) -> Bool) async -> [Duration] {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [Duration]? in
                    let pending = state.pending
                    if condition(pending) || Task.isCancelled { return pending }
                    state.watchers.append(Watcher(id: id, condition: condition, continuation: continuation))
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let (watcher, pending) = state.withLock { state in
                let index = state.watchers.firstIndex { $0.id == id }
                return (index.map { state.watchers.remove(at: $0) }, state.pending)
            }
            watcher?.continuation.resume(returning: pending)
        }
    }

    private func notifyWatchers() {
        let ready = state.withLock { state -> [(CheckedContinuation<[Duration], Never>, [Duration])] in
            let pending = state.pending
            var ready: [(CheckedContinuation<[Duration], Never>, [Duration])] = []
            state.watchers.removeAll { watcher in
                guard watcher.condition(pending) else { return false }
                ready.append((watcher.continuation, pending))
                return true
            }
            return ready
        }
        for (continuation, pending) in ready { continuation.resume(returning: pending) }
    }
}
