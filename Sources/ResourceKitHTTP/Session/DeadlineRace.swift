#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// The first of the transport's answer, the deadline and the caller's cancellation wins. When the transport
/// answered, the deadline is cancelled; otherwise the transport is stopped too.
///
/// It is its own deadline's action, and holds what stops the work as a value, so that a request's race costs
/// no closure of its own.
final class DeadlineRace: DeadlineAction {
    /// A response, or `nil` for work that returns none (a refresh).
    typealias Value = HTTPResponse?

    /// What runs the work, and stops it when the deadline or the caller ends the race first.
    enum Work: Sendable {
        case task(Task<Void, Never>)
        case request(any StoppableRequest)

        func stop() {
            switch self {
            case .task(let task): task.cancel()
            case .request(let request): request.stop()
            }
        }
    }

    private struct State {
        var continuation: CheckedContinuation<Result<Value, NetworkError>, Never>?
        var result: Result<Value, NetworkError>?
        var byTransport = false
        var work: Work?
        var deadlineToken: UInt64?
    }
    private let state = Locked(State())
    private let scheduler: DeadlineScheduler

    init(scheduler: DeadlineScheduler) { self.scheduler = scheduler }

    func begin(_ continuation: CheckedContinuation<Result<Value, NetworkError>, Never>) {
        let early = state.withLock { state -> Result<Value, NetworkError>? in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Records the work and schedules the deadline. Work that finished while it started (a transport that
    /// answered without suspending) schedules no deadline; a race that ended in between undoes both.
    func attach(_ work: Work, deadline: Duration?) {
        let finishedByTransport = state.withLock { state -> Bool? in
            if state.result != nil { return state.byTransport }
            state.work = work
            return nil
        }
        if let finishedByTransport {
            if !finishedByTransport { work.stop() }
            return
        }
        guard let deadline else { return }
        let token = scheduler.schedule(at: deadline, self)
        let ended = state.withLock { state -> Bool in
            if state.result != nil { return true }
            state.deadlineToken = token
            return false
        }
        // `finish` took the work and saw no token: the deadline is this call's to cancel.
        if ended { scheduler.cancel(token) }
    }

    func deadlinePassed() {
        finish(.failure(.timeout), fromTransport: false)
    }

    func finish(_ result: Result<Value, NetworkError>, fromTransport: Bool) {
        let (continuation, work, token) = state.withLock { state in
            guard state.result == nil else {
                return (CheckedContinuation<Result<Value, NetworkError>, Never>?.none, Work?.none, UInt64?.none)
            }
            state.result = result
            state.byTransport = fromTransport
            defer {
                state.continuation = nil
                state.work = nil
                state.deadlineToken = nil
            }
            return (state.continuation, fromTransport ? nil : state.work, state.deadlineToken)
        }
        if let token { scheduler.cancel(token) }
        work?.stop()
        continuation?.resume(returning: result)
    }
}

/// A request a ``CallbackTransport`` started, which can be stopped.
protocol StoppableRequest: AnyObject, Sendable {
    /// Stops the request; its completion then reports `.cancelled`.
    func stop()
}

/// A transport that can start a request with a completion handler, so the session awaits it without a task
/// in between. ``URLSessionTransport`` is one.
protocol CallbackTransport: HTTPTransport {
    /// Starts the request; `completion` runs exactly once. Returns what cancels the request.
    func start(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, NetworkError>) -> Void
    ) -> any StoppableRequest
}

/// A session's clock with its type erased: instants are durations since the session was made.
// `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) asks it the time, part of the API surface.
@usableFromInline struct Timeline: Sendable {
    private let read: @Sendable () -> Duration
    private let wait: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        if C.self == ContinuousClock.self {
            // The default clock, read without a generic call: every request asks the time at least once, and a
            // read of it through the `Clock` witnesses cost several times the clock itself.
            let origin = ContinuousClock.now
            read = { origin.duration(to: ContinuousClock.now) }
            wait = { offset in try await ContinuousClock().sleep(until: origin.advanced(by: offset), tolerance: nil) }
            return
        }
        let origin = clock.now
        read = { origin.duration(to: clock.now) }
        wait = { offset in try await clock.sleep(until: origin.advanced(by: offset), tolerance: nil) }
    }

    /// Now, as time since the session was made.
    @usableFromInline var now: Duration { read() }

    /// Returns at `instant` (time since the session was made); throws when cancelled first.
    func sleep(until instant: Duration) async throws { try await wait(instant) }
}
