import ResourceKitHTTP
import ResourceKitTesting

/// State that a test or a test double changes while another task waits for it: a lock whose every change
/// raises `Changes` (the testing kit's), so that `waitUntil` re-checks its condition when something changed, and at no other time.
package final class Watched<Value>: Sendable {
    private let lock: Locked<Value>

    package init(_ value: Value) { lock = Locked(value) }

    /// The value now. It raises nothing, so a `waitUntil` condition may read it.
    package var value: Value { lock.withLock { $0 } }

    /// Reads part of the value; raises nothing.
    package func read<Result>(_ body: (Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body($0) }
    }

    /// Changes the value, then tells the waiting tests. Never call it from a `waitUntil` condition: each call
    /// would wake the wait again.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        defer { Changes.raise() }
        return try lock.withLock(body)
    }
}
