import Foundation

/// A value behind a lock, for the benchmarks' own shared state (the library's lock is not part of its API).
package final class Locked<Value>: @unchecked Sendable {
    // Safe to share: every access to `value` happens inside `withLock`.
    private var value: Value
    private let lock = NSLock()

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
