import Foundation

/// A value behind a lock, for the package's own shared state.
///
/// It locks a `pthread_mutex_t`, which ThreadSanitizer understands on every platform; on Linux,
/// `Synchronization.Mutex` locks with raw futex calls, so TSan reported every access it protects as a race
/// and could not find real ones. One implementation everywhere: the code Apple platforms run is the code
/// Linux CI builds and tests.
///
/// A reference: copies share one value and one lock. The mutex and the value live in one object
/// (``LockedBuffer``), so that making one is one allocation, and taking the lock of an object nobody touched
/// lately (a pushed change reaching a thousand lists) misses the cache once, not once for the object and again
/// for a mutex allocated beside it.
@usableFromInline package struct Locked<Value>: @unchecked Sendable {
    // Safe to share: every access to the value happens inside `withLock`.
    // `@usableFromInline`, with `withLock` `@inlinable`: a client that specializes the read path locks
    // without a call through generic code. That makes them part of the module's API surface. The pthread
    // calls stay behind non-inlinable `lock`/`unlock`, so that Glibc is not part of it.
    @usableFromInline let buffer: LockedBuffer<Value>

    /// Creates the lock around an initial value.
    /// - Parameter value: The initial value.
    @usableFromInline package init(_ value: Value) { buffer = LockedBuffer.make(value) }

    /// Runs `body` with exclusive access to the value.
    /// - Parameter body: Reads or changes the value; it must not call back into this lock.
    /// - Returns: What `body` returns.
    @inlinable
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        buffer.lock()
        defer { buffer.unlock() }
        // Through the header's pointer: the mutex already excludes every other access, so the run-time exclusivity
        // check of a class property would be one more for nothing.
        return try buffer.withUnsafeMutablePointerToHeader { try body(&$0.pointee) }
    }
}

/// The object behind a ``Locked``: the value as the header, then the mutex in the words that follow it. Neither
/// moves while the object lives, as a mutex must not. (Words rather than a `pthread_mutex_t` element, so that
/// the type the inlinable `withLock` names is not Glibc's or Darwin's.)
@usableFromInline final class LockedBuffer<Value>: ManagedBuffer<Value, UInt64> {
    private static var mutexWords: Int {
        (MemoryLayout<pthread_mutex_t>.size + MemoryLayout<UInt64>.size - 1) / MemoryLayout<UInt64>.size
    }

    static func make(_ value: Value) -> LockedBuffer {
        let buffer = unsafeDowncast(create(minimumCapacity: mutexWords) { _ in value }, to: LockedBuffer.self)
        let mutex = buffer.withUnsafeMutablePointerToElements { words in
            UnsafeMutableRawPointer(words).bindMemory(to: pthread_mutex_t.self, capacity: 1)
        }
        pthread_mutex_init(mutex, nil)
        return buffer
    }

    /// The mutex, in the object's tail; its alignment is a word's on every platform.
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> {
        withUnsafeMutablePointerToElements { words in
            UnsafeMutableRawPointer(words).assumingMemoryBound(to: pthread_mutex_t.self)
        }
    }

    deinit { pthread_mutex_destroy(mutex) }

    @usableFromInline func lock() { pthread_mutex_lock(mutex) }

    @usableFromInline func unlock() { pthread_mutex_unlock(mutex) }
}
