import Observation

/// What the package's own tests wait on instead of polling, kept in the testing kit: the library raises no
/// signal for its tests.
///
/// ``wait(_:timeout:seen:_:)`` re-checks its condition when something it read changes, and at no other time:
/// - a value the library publishes through Observation (a resource's or list's `state`, `waitingCallerCount`
///   and `observerCount`, the session's `activity`, and the few package-visible counts that publish through
///   `ObservationPoint`), which it tracks while the condition reads it;
/// - a test double's state, which calls ``raise()`` after each change.
package enum Changes {
    /// Moves with each raise; a wait waits for it to move past what it saw before its last check.
    private static let generation = Awaitable<UInt64>(0)

    /// Tells every waiting test that a test double's state changed.
    package static func raise() { generation.withLock { $0 &+= 1 } }

    /// Returns once `condition` holds.
    ///
    /// - Parameters:
    ///   - description: What the caller waits for, for the error.
    ///   - timeout: A guard against a hang: real time after which the wait fails.
    ///   - seen: What the caller sees instead, for the error; evaluated only when the wait fails.
    ///   - condition: What to wait for; it must not change what it reads.
    /// - Throws: ``WaitTimeout`` when `timeout` passes first or the waiting task is cancelled.
    package static func wait(
        _ description: String, timeout: Duration, seen: () -> String = { "" }, _ condition: () -> Bool
    ) async throws(WaitTimeout) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let raised = generation.value
            // Observation raises at the first change of anything the condition reads that it tracks…
            if withObservationTracking(condition, onChange: { raise() }) { return }
            // …from the moment the tracking is installed: a change made before that, after the condition read
            // its value, is seen by this second check.
            if condition() { return }
            let left = ContinuousClock.now.duration(to: deadline)
            let result = await generation.wait(
                for: description, timeout: left, seen: { _ in [] }, until: { $0 != raised })
            if case .failure(let error) = result {
                // Not checked again: a condition that holds now, with no change heard, is a missed signal.
                let saw = seen()
                throw WaitTimeout(
                    awaited: description, reason: error.reason, timeout: timeout, seen: saw.isEmpty ? [] : [saw])
            }
        }
    }
}
