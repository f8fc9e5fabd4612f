import ResourceKitTesting

/// Waits until `condition` holds. It re-checks the condition when something it read changes (the testing
/// kit's `Changes`: a value the library publishes through Observation, such as a resource's state,
/// `waitingCallerCount` or `observerCount`; a request reaching a test double; a `Watched` value changing),
/// never on a timer. `timeout` guards against a hang; when it fires, the error says what the wait was for
/// and what `seen` describes.
package func waitUntil(
    _ description: String, timeout: Duration = .seconds(120), seen: () -> String = { "" },
    _ condition: () -> Bool
) async throws {
    try await Changes.wait(description, timeout: timeout, seen: seen, condition)
}
