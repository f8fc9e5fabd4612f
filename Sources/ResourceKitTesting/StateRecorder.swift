public import ResourceKit

/// Collects every state a stream yields, so a test can wait for and assert an exact sequence.
///
/// ```swift
/// let recorder = StateRecorder(resource.states)
/// try await resource.read(1)
/// let states = try await recorder.waitForCount(3)
/// #expect(states == [.idle, .loading(previous: nil), .available(post)])
/// ```
/// Waits end with a ``StateRecorderTimeout`` that lists the states seen, instead of hanging: at their timeout,
/// or at once when the stream finishes (its resource was released) before the states arrive.
public final class StateRecorder<State: Sendable>: Sendable {
    private struct Waiter {
        var isSatisfied: @Sendable ([State]) -> Bool
        var continuation: CheckedContinuation<Result<[State], StateRecorderTimeout>, Never>
        var description: String
    }

    private struct Storage {
        var states: [State] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var isFinished = false
    }

    private let storage = Locked(Storage())
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    /// Starts recording a stream. The stream's first element, the current state, is recorded too.
    /// - Parameter stream: The states to record, such as `resource.states`.
    public init(_ stream: AsyncStream<State>) {
        let consumer = Task { [storage] in
            for await state in stream {
                let ready: [(Waiter, [State])] = storage.withLock { storage in
                    storage.states.append(state)
                    let states = storage.states
                    let ready = storage.waiters.filter { $0.value.isSatisfied(states) }
                    for id in ready.keys { storage.waiters.removeValue(forKey: id) }
                    return ready.values.map { ($0, states) }
                }
                for (waiter, states) in ready { waiter.continuation.resume(returning: .success(states)) }
            }
            // The stream finished: nothing more will arrive, so every wait still open fails now.
            let unmet: [(Waiter, [State])] = storage.withLock { storage in
                storage.isFinished = true
                defer { storage.waiters.removeAll() }
                return storage.waiters.values.map { ($0, storage.states) }
            }
            for (waiter, states) in unmet {
                waiter.continuation.resume(
                    returning: .failure(
                        StateRecorderTimeout(
                            expected: waiter.description, timeout: .zero, seen: states.map { "\($0)" },
                            isStreamFinished: true)))
            }
        }
        task.withLock { $0 = consumer }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    /// The states recorded so far.
    public var states: [State] { storage.withLock { $0.states } }

    /// Stops recording; the stream's observer is unregistered.
    public func stop() {
        task.withLock { $0?.cancel() }
    }

    /// Waits until the recorded states satisfy `condition`.
    /// - Parameters:
    ///   - timeout: How long to wait.
    ///   - description: What is awaited, for the timeout message.
    ///   - condition: Decides on all states recorded so far.
    /// - Returns: The states recorded when the condition held.
    /// - Throws: ``StateRecorderTimeout`` listing the states seen.
    @discardableResult
    public func wait(
        timeout: Duration = .seconds(5),
        for description: String = "a condition",
        until condition: @escaping @Sendable ([State]) -> Bool
    ) async throws(StateRecorderTimeout) -> [State] {
        let id: UInt64 = storage.withLock { storage in
            storage.nextID &+= 1
            return storage.nextID
        }
        let result = await withCheckedContinuation { continuation in
            let immediate: Result<[State], StateRecorderTimeout>? = storage.withLock { storage in
                if condition(storage.states) { return .success(storage.states) }
                if storage.isFinished {
                    return .failure(
                        StateRecorderTimeout(
                            expected: description, timeout: .zero, seen: storage.states.map { "\($0)" },
                            isStreamFinished: true))
                }
                storage.waiters[id] = Waiter(
                    isSatisfied: condition, continuation: continuation, description: description)
                return nil
            }
            if let immediate {
                continuation.resume(returning: immediate)
                return
            }
            Task { [storage] in
                // Clamped: `Task.sleep` traps on a deadline decades away.
                await RealTimeLimit.sleep(for: timeout)
                let expired = storage.withLock { storage in
                    storage.waiters.removeValue(forKey: id).map { ($0, storage.states) }
                }
                if let (waiter, states) = expired {
                    let seen = states.map { "\($0)" }
                    waiter.continuation.resume(
                        returning: .failure(
                            StateRecorderTimeout(expected: waiter.description, timeout: timeout, seen: seen)))
                }
            }
        }
        return try result.get()
    }

    /// Waits until at least `count` states are recorded.
    /// - Parameters:
    ///   - count: How many states.
    ///   - timeout: How long to wait.
    /// - Returns: The states recorded.
    /// - Throws: ``StateRecorderTimeout``.
    @discardableResult
    public func waitForCount(_ count: Int, timeout: Duration = .seconds(5)) async throws(StateRecorderTimeout)
        -> [State]
    {
        try await wait(timeout: timeout, for: "\(count) states") { $0.count >= count }
    }
}

extension StateRecorder where State: Equatable {
    /// Waits until the recorded states are exactly `expected`, and checks that no other state follows
    /// before then.
    /// - Parameters:
    ///   - expected: The exact sequence.
    ///   - timeout: How long to wait.
    /// - Returns: The states recorded.
    /// - Throws: ``StateRecorderTimeout`` when the sequence does not appear in time, or the states seen differ.
    @discardableResult
    public func expect(_ expected: [State], timeout: Duration = .seconds(5)) async throws(StateRecorderTimeout)
        -> [State]
    {
        let states = try await wait(timeout: timeout, for: "\(expected)") { $0.count >= expected.count }
        guard states == expected else {
            throw StateRecorderTimeout(expected: "\(expected)", timeout: .zero, seen: states.map { "\($0)" })
        }
        return states
    }
}

/// A wait on a ``StateRecorder`` that did not end as expected.
public struct StateRecorderTimeout: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was awaited.
    public var expected: String
    /// How long the recorder waited; zero when the states arrived but differ.
    public var timeout: Duration
    /// The states recorded, described.
    public var seen: [String]
    /// Whether the stream finished (its resource was released) before the states arrived.
    public var isStreamFinished: Bool

    init(expected: String, timeout: Duration, seen: [String], isStreamFinished: Bool = false) {
        self.expected = expected
        self.timeout = timeout
        self.seen = seen
        self.isStreamFinished = isStreamFinished
    }

    /// Says what was awaited and lists the states seen.
    public var description: String {
        let prefix =
            if isStreamFinished {
                "The stream finished before \(expected)"
            } else if timeout == .zero {
                "Recorded states differ from \(expected)"
            } else {
                "Timed out after \(timeout) waiting for \(expected)"
            }
        return "\(prefix); saw \(seen.count) state(s): [\(seen.joined(separator: ", "))]"
    }
}

extension Resource {
    /// Starts recording this resource's states.
    /// - Returns: A recorder whose first state is the current one.
    public func recordStates() -> StateRecorder<ResourceState<Value>> { StateRecorder(states) }
}

extension ListResource {
    /// Starts recording this list's states.
    /// - Returns: A recorder whose first state is the current one.
    public func recordStates() -> StateRecorder<ListState<Item>> { StateRecorder(states) }
}
