import BenchmarkFixtures
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The baseline of the endless-body cases: a bare `URLSession` data delegate that keeps the first mebibyte of a
/// body that never ends and cancels its task, with nothing of ResourceKit on the path. It runs the way the
/// library's streaming session runs on Linux: on `URLSession`'s own queue (an operation queue that runs each
/// operation where it is added, so that nothing piles up between the socket and the delegate), the cancel sent
/// to a queue of its own (`cancel()` waits for `URLSession`'s queue). What it costs in memory
/// and in bytes the server writes after the decision is what the platform costs; a case of the library is
/// compared with it in the same run.
enum BareEndlessClient {
    /// Reads `http://127.0.0.1:port/endless` until the first mebibyte, then cancels; returns at that decision.
    /// The session is invalidated once the task has ended.
    static func firstMebibyte(port: UInt16) async throws {
        let delegate = Delegate()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: InlineQueue())
        guard let url = URL(string: "http://127.0.0.1:\(port)/endless") else { throw BenchmarkError("bad URL") }
        let task = session.dataTask(with: url)
        await withCheckedContinuation { continuation in
            delegate.decided.withLock { $0 = continuation }
            task.resume()
        }
        // After the decision, not timed: the session goes once its task has ended.
        Task.detached {
            await delegate.ended.waitQuietly()
            session.finishTasksAndInvalidate()
        }
    }

    private final class InlineQueue: OperationQueue, @unchecked Sendable {
        override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
    }

    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let decided = Locked<CheckedContinuation<Void, Never>?>(nil)
        let ended = EndedSignal()
        // Touched only on the delegate queue, which is serial.
        private var kept = Data()
        private var stopped = false

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            guard !stopped else { return }
            kept.append(data.prefix((1 << 20) - kept.count))
            guard kept.count >= 1 << 20 else { return }
            stopped = true
            DispatchQueue(label: "bare.cancel").async { dataTask.cancel() }
            decided.withLock { $0.take() }?.resume()
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            decided.withLock { $0.take() }?.resume()
            ended.signal()
        }
    }

    /// Opened once; waiters resume.
    final class EndedSignal: Sendable {
        private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func signal() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func waitQuietly() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }
}

extension Optional {
    /// The value, leaving `nil`.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
