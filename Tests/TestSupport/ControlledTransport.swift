package import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import Foundation
    package import FoundationNetworking
#else
    package import Foundation
#endif

/// A transport that holds every request until the test answers it, by arrival index, so a test decides the
/// order of every answer. Cancelling the caller ends a held request with `.cancelled` and records it.
package final class ControlledTransport: HTTPTransport {
    package typealias Answer = Result<HTTPResponse, NetworkError>

    private struct State {
        var requests: [URLRequest] = []
        var held: [Int: CheckedContinuation<Answer, Never>] = [:]
        var early: [Int: Answer] = [:]
        var cancelled: Set<Int> = []
        var finished: Set<Int> = []
    }

    private let state = Watched(State())

    package init() {}

    package var requests: [URLRequest] { state.read { $0.requests } }
    package var requestCount: Int { state.read { $0.requests.count } }
    package var cancelledRequests: Set<Int> { state.read { $0.cancelled } }

    package func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let index = state.withLock { state in
            state.requests.append(request)
            return state.requests.count - 1
        }
        let answer = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                let now: Answer? = state.withLock { state in
                    if let answer = state.early.removeValue(forKey: index) { return answer }
                    if Task.isCancelled {
                        state.cancelled.insert(index)
                        return .failure(.cancelled)
                    }
                    state.held[index] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let held = state.withLock { state in
                let held = state.held.removeValue(forKey: index)
                if held != nil { state.cancelled.insert(index) }
                return held
            }
            held?.resume(returning: .failure(.cancelled))
        }
        state.withLock { _ = $0.finished.insert(index) }
        return try answer.get()
    }

    /// Answers request `index` (counted from 0 in arrival order).
    package func answer(_ index: Int, _ answer: Answer) {
        let held = state.withLock { state -> CheckedContinuation<Answer, Never>? in
            if let held = state.held.removeValue(forKey: index) { return held }
            state.early[index] = answer
            return nil
        }
        held?.resume(returning: answer)
    }

    package func answer(_ index: Int, json: String, status: Int = 200, headers: HTTPHeaders = [:]) {
        answer(index, .success(HTTPResponse(statusCode: status, headers: headers, body: Data(json.utf8))))
    }

    /// Whether request `index` is held, waiting for an answer.
    package func isHeld(_ index: Int) -> Bool { state.read { $0.held[index] != nil } }

    /// Waits until at least `count` requests have arrived.
    package func waitForRequests(_ count: Int) async throws {
        try await waitUntil("\(count) requests", seen: { "\(self.requestCount)" }) { requestCount >= count }
    }

    /// Waits until request `index` is held, waiting for its answer (it arrives a moment before that).
    package func waitUntilHeld(_ index: Int) async throws {
        try await waitUntil("request \(index) is held") { isHeld(index) }
    }

    /// Waits until request `index` has ended (answered or cancelled) inside the transport.
    package func waitUntilFinished(_ index: Int) async throws {
        try await waitUntil("request \(index) ends") { state.read { $0.finished.contains(index) } }
    }
}
