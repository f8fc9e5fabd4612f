import Foundation

/// A value behind a lock, for the package's own shared state.
///
/// It locks a `pthread_mutex_t`, which ThreadSanitizer understands on every platform; on Linux,
/// `Synchronization.Mutex` locks with raw futex calls, so TSan reported every access it protects as a race
/// and could not find real ones. One implementation everywhere: the code Apple platforms run is the code
/// Linux CI builds and tests.
@usableFromInline package final class Locked<Value>: @unchecked Sendable {
    // Safe to share: every access to `value` happens inside `withLock`.
    // `@usableFromInline`, with `withLock` `@inlinable`: a client that specializes the read path locks
    // without a call through generic code. That makes them part of the module's API surface. The pthread
    // calls stay behind non-inlinable `lock`/`unlock`, so that Glibc is not part of it.
    @usableFromInline var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates the lock around an initial value.
    /// - Parameter value: The initial value.
    @usableFromInline package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    /// - Parameter body: Reads or changes the value; it must not call back into this lock.
    /// - Returns: What `body` returns.
    @inlinable
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body(&value)
    }

    @usableFromInline func lock() { pthread_mutex_lock(mutex) }

    @usableFromInline func unlock() { pthread_mutex_unlock(mutex) }
}
