import ResourceKitHTTP

/// State a test double changes while a test waits for it: the testing kit's one waiter, behind
/// ``StubTransport/waitForRequests(_:timeout:)``, ``ManualClock/waitForSleepers(timeout:_:)`` and
/// ``StateRecorder``'s waits.
///
/// A wait checks its condition at once, and again after each change made with ``withLock(_:)``, and at no
/// other time: no polling. It ends with a ``WaitTimeout`` at its timeout (real time, whatever clock the code
/// under test uses), when the waiting task is cancelled, or when the state is ``finish()``ed first. A condition
/// runs under the lock: it must not call back into the same object.
final class Awaitable<State: Sendable>: Sendable {
    private struct Waiter {
        var awaited: String
        var timeout: Duration
        var condition: @Sendable (State) -> Bool
        var seen: @Sendable (State) -> [String]
        var continuation: CheckedContinuation<Result<State, WaitTimeout>, Never>
        /// Ends the wait at its timeout; cancelled when the condition holds first.
        var timer: Task<Void, Never>?
    }

    private struct Inner {
        var value: State
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var isFinished = false
    }

    private let inner: Locked<Inner>

    init(_ value: State) { inner = Locked(Inner(value: value)) }

    /// The state now.
    var value: State { inner.withLock { $0.value } }

    /// Reads part of the state.
    func read<Result>(_ body: (State) throws -> Result) rethrows -> Result {
        try inner.withLock { try body($0.value) }
    }

    /// Changes the state, then ends every wait whose condition now holds.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        let (result, ready) = try inner.withLock { inner -> (Result, [(Waiter, State)]) in
            let result = try body(&inner.value)
            guard !inner.waiters.isEmpty else { return (result, []) }
            let state = inner.value
            var ready: [Waiter] = []
            for (id, waiter) in inner.waiters where waiter.condition(state) {
                inner.waiters.removeValue(forKey: id)
                ready.append(waiter)
            }
            return (result, ready.map { ($0, state) })
        }
        for (waiter, state) in ready {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .success(state))
        }
        return result
    }

    /// Nothing will change any more: every wait still open ends now, and later ones at once, unless their
    /// condition holds.
    func finish() {
        let unmet = inner.withLock { inner in
            inner.isFinished = true
            defer { inner.waiters.removeAll() }
            return inner.waiters.values.map { ($0, inner.value) }
        }
        for (waiter, state) in unmet {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .failure(Self.error(waiter, .finished, state)))
        }
    }

    /// Waits until `condition` holds of the state, and returns the state it held of.
    /// - Parameters:
    ///   - awaited: What the wait is for, for the error.
    ///   - timeout: How long to wait, in real time; one that is not positive fails at once unless the condition
    ///     holds, one above 10⁹ seconds counts as that.
    ///   - seen: Describes the state for the error.
    ///   - condition: What to wait for.
    /// - Returns: The state the condition held of, or the error the wait ended with.
    func wait(
        for awaited: String, timeout: Duration, seen: @escaping @Sendable (State) -> [String],
        until condition: @escaping @Sendable (State) -> Bool
    ) async -> Result<State, WaitTimeout> {
        let id = inner.withLock { inner in
            inner.nextID &+= 1
            return inner.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = inner.withLock { inner -> (State, WaitTimeout.Reason?)? in
                    if condition(inner.value) { return (inner.value, nil) }
                    if inner.isFinished { return (inner.value, .finished) }
                    // Checked under the lock the cancellation handler takes: a cancellation after it finds the
                    // waiter registered.
                    if Task.isCancelled { return (inner.value, .cancelled) }
                    // Started under the lock, so that no change or cancellation can miss it.
                    let timer = Task { [self] in
                        await RealTimeLimit.sleep(for: timeout)
                        end(id, .timedOut)
                    }
                    inner.waiters[id] = Waiter(
                        awaited: awaited, timeout: timeout, condition: condition, seen: seen,
                        continuation: continuation, timer: timer)
                    return nil
                }
                guard let (state, reason) = now else { return }
                guard let reason else { return continuation.resume(returning: .success(state)) }
                let error = WaitTimeout(awaited: awaited, reason: reason, timeout: timeout, seen: seen(state))
                continuation.resume(returning: .failure(error))
            }
        } onCancel: {
            end(id, .cancelled)
        }
    }

    /// Fails the wait `id` if it is still waiting.
    private func end(_ id: UInt64, _ reason: WaitTimeout.Reason) {
        let ended = inner.withLock { inner in inner.waiters.removeValue(forKey: id).map { ($0, inner.value) } }
        guard let (waiter, state) = ended else { return }
        if reason != .timedOut { waiter.timer?.cancel() }
        waiter.continuation.resume(returning: .failure(Self.error(waiter, reason, state)))
    }

    private static func error(_ waiter: Waiter, _ reason: WaitTimeout.Reason, _ state: State) -> WaitTimeout {
        WaitTimeout(awaited: waiter.awaited, reason: reason, timeout: waiter.timeout, seen: waiter.seen(state))
    }
}
