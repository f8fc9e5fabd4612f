public import ResourceKit

/// A one-shot gate for tests: tasks that ``wait()`` are held until ``open()`` is called.
///
/// Use it in a stubbed response to hold a request in flight until the test decides, so the order of events
/// is set by the test instead of by timing.
public final class AsyncLatch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Locked(State())

    /// Creates a closed latch.
    public init() {}

    /// Whether ``open()`` was called.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Lets every waiting and future ``wait()`` through.
    public func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until the latch is open.
    /// - Throws: `NetworkError/cancelled` when the waiting task is cancelled first.
    public func wait() async throws(NetworkError) {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.isOpen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
        if !isOpen && Task.isCancelled { throw .cancelled }
    }
}
