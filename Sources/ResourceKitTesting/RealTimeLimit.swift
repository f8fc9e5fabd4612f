import ResourceKitHTTP

/// The real-time limit of the testing waits (``StubTransport/waitForRequests(_:timeout:)``,
/// ``ManualClock/waitForSleepers(timeout:_:)``), measured on `ContinuousClock` whatever clock the code under
/// test uses.
enum RealTimeLimit {
    /// The longest wait: `Task.sleep` traps converting a deadline much further away (about 31 years here).
    static let longest = Duration.longest

    /// Returns once `timeout` has passed, or at once when cancelled. A timeout that is not positive returns
    /// at once; one above ``longest`` waits that long.
    static func sleep(for timeout: Duration) async {
        try? await Task.sleep(for: min(max(timeout, .zero), longest), clock: .continuous)
    }
}
