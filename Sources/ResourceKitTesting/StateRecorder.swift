public import ResourceKit

/// Collects every state a stream yields, so a test can wait for and assert an exact sequence.
///
/// ```swift
/// let recorder = StateRecorder(resource.states)
/// try await resource.read(1)
/// let states = try await recorder.waitForCount(3)
/// #expect(states == [.idle, .loading(previous: nil), .available(post)])
/// ```
/// Waits end with a ``WaitTimeout`` whose ``WaitTimeout/seen`` lists the states recorded, instead of hanging:
/// at their timeout (`timedOut`), when the waiting task is cancelled (`cancelled`), or at once when the stream
/// finishes (its resource was released) before the states arrive (`finished`).
public final class StateRecorder<State: Sendable>: Sendable {
    private let recorded = Awaitable<[State]>([])
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    /// Starts recording a stream. The stream's first element, the current state, is recorded too.
    /// - Parameter stream: The states to record, such as `resource.states`.
    public init(_ stream: AsyncStream<State>) {
        let consumer = Task { [recorded] in
            for await state in stream {
                recorded.withLock { $0.append(state) }
            }
            // The stream finished: nothing more will arrive, so every wait still open fails now.
            recorded.finish()
        }
        task.withLock { $0 = consumer }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    /// The states recorded so far.
    public var states: [State] { recorded.value }

    /// Stops recording; the stream's observer is unregistered.
    public func stop() {
        task.withLock { $0?.cancel() }
    }

    /// Waits until the recorded states satisfy `condition`.
    /// - Parameters:
    ///   - timeout: How long to wait, in real time.
    ///   - description: What is awaited, for the error.
    ///   - condition: Decides on all states recorded so far. It runs under the recorder's lock: it must not use
    ///     the recorder itself (its `states`), which would never return; the states are its argument.
    /// - Returns: The states recorded when the condition held.
    /// - Throws: ``WaitTimeout`` listing the states seen.
    @discardableResult
    public func wait(
        timeout: Duration = .seconds(5),
        for description: String = "a condition",
        until condition: @escaping @Sendable ([State]) -> Bool
    ) async throws(WaitTimeout) -> [State] {
        try await recorded.wait(
            for: description, timeout: timeout, seen: { $0.map { "\($0)" } }, until: condition
        ).get()
    }

    /// Waits until at least `count` states are recorded.
    /// - Parameters:
    ///   - count: How many states.
    ///   - timeout: How long to wait.
    /// - Returns: The states recorded.
    /// - Throws: ``WaitTimeout``.
    @discardableResult
    public func waitForCount(_ count: Int, timeout: Duration = .seconds(5)) async throws(WaitTimeout) -> [State] {
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
    /// - Throws: ``WaitTimeout``: `mismatched` when as many states arrived and they differ, or why the wait
    ///   ended before they arrived.
    @discardableResult
    public func expect(_ expected: [State], timeout: Duration = .seconds(5)) async throws(WaitTimeout) -> [State] {
        let states = try await wait(timeout: timeout, for: "\(expected)") { $0.count >= expected.count }
        guard states == expected else {
            throw WaitTimeout(
                awaited: "\(expected)", reason: .mismatched, timeout: timeout, seen: states.map { "\($0)" })
        }
        return states
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
