import Synchronization

/// A signal raised whenever something the package's own tests wait for may have changed — a machine's
/// transition, an observer that came or went, a request a test double received — so that a test waits for
/// the change instead of polling for it.
///
/// ``wait(_:timeout:seen:_:)`` re-checks its condition each time the signal is raised after it checked last,
/// and at no other time; the timeout is a guard against a hang, not a way to wait. With nobody waiting, a
/// raise costs one atomic load and nothing else.
@usableFromInline package enum Changes {
    /// How many tasks wait; a raise with none does nothing else.
    private static let waiting = Atomic<Int>(0)

    private struct State {
        /// Raised so far: a waiter that saw this value and then checks its condition misses no raise.
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private static let state = Locked(State())

    /// Tells every waiting test that something it waits for may have changed.
    @usableFromInline package static func raise() {
        guard waiting.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let woken = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once `condition` holds, re-checking it each time ``raise()`` is called.
    ///
    /// - Parameters:
    ///   - description: What the caller waits for, for the error.
    ///   - timeout: A guard against a hang: real time after which the wait fails.
    ///   - seen: What the caller sees instead, for the error; evaluated only when the wait fails.
    ///   - condition: What to wait for; it must not call back into ``raise()``.
    /// - Throws: ``ChangeTimeout`` when `timeout` passes first, or the waiting task is cancelled.
    package static func wait(
        _ description: String, timeout: Duration, seen: () -> String = { "" }, _ condition: () -> Bool
    ) async throws(ChangeTimeout) {
        // Counted before the first check, so that a change made after the check raises.
        waiting.add(1, ordering: .sequentiallyConsistent)
        defer { waiting.subtract(1, ordering: .sequentiallyConsistent) }
        let deadline = ContinuousClock.now + timeout
        // The guard: it raises once at the deadline, which ends the wait below if the condition still fails.
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            raise()
        }
        defer { timer.cancel() }
        while true {
            let generation = state.withLock { $0.generation }
            if condition() { return }
            guard ContinuousClock.now < deadline, !Task.isCancelled else {
                throw ChangeTimeout(description: description, timeout: timeout, seen: seen())
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        // A raise since the check above: check again at once.
                        guard state.generation == generation, !Task.isCancelled else { return true }
                        state.nextID &+= 1
                        state.waiters[state.nextID] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                raise()
            }
        }
    }
}

/// A wait of ``Changes/wait(_:timeout:seen:_:)`` that did not see its condition hold in time.
package struct ChangeTimeout: Error, CustomStringConvertible {
    /// What the wait was for.
    package var description: String

    init(description: String, timeout: Duration, seen: String) {
        self.description =
            "waited \(timeout) for \(description)" + (seen.isEmpty ? "" : "; saw \(seen)")
    }
}
