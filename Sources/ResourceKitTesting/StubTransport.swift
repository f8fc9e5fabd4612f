public import Foundation
public import ResourceKit

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A transport that answers with canned responses, by method and path, and records every request.
///
/// ```swift
/// let stub = StubTransport()
/// stub.stub(.get, "/api/posts/1", json: #"{"id":"1","title":"Hello"}"#)
/// let session = NetworkSession(baseURL: "https://example.com/api", transport: stub)
/// ```
/// A request with no stub throws `NetworkError/transport(code:message:)` naming it.
public final class StubTransport: HTTPTransport {
    /// Produces the response for a request.
    public typealias Responder = @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse

    private struct Route {
        var method: HTTPMethod
        var path: String
        var responder: Responder
    }

    private struct State {
        var routes: [Route] = []
        var requests: [URLRequest] = []
        var cancellations = 0
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// Creates a transport with no stubs.
    public init() {}

    /// Answers `method path` with a computed response. A later stub for the same route replaces it.
    ///
    /// Paths are compared decoded, as ``InMemoryBackend/requestLog`` records them: a stub for `/groups/a b`
    /// (or `/groups/a%20b`) answers a request for `/groups/a%20b`.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match, such as `/api/posts/1`; the query is not compared.
    ///   - responder: Produces the response; it may wait, throw, or look at the request.
    public func stub(_ method: HTTPMethod, _ path: String, responder: @escaping Responder) {
        state.withLock { state in
            let path = decodedPath(path)
            state.routes.removeAll { $0.method == method && $0.path == path }
            state.routes.append(Route(method: method, path: path, responder: responder))
        }
    }

    /// Answers `method path` with a fixed response.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match.
    ///   - status: The status code.
    ///   - headers: The response headers.
    ///   - body: The body.
    ///   - delay: How long to wait before answering; the wait ends early, with `.cancelled`, on cancellation.
    ///   - latch: Holds the response until the test opens the latch, so the test decides when it arrives;
    ///     cancellation ends the wait with `.cancelled`.
    public func stub(
        _ method: HTTPMethod,
        _ path: String,
        status: Int = 200,
        headers: HTTPHeaders = HTTPHeaders(),
        body: Data = Data(),
        delay: Duration? = nil,
        heldBy latch: AsyncLatch? = nil
    ) {
        stub(method, path) { [weak self] request async throws(NetworkError) -> HTTPResponse in
            do {
                if let delay { try await Task.sleep(for: delay) }
                try await latch?.wait()
            } catch {
                self?.recordCancellation()
                throw .cancelled
            }
            return HTTPResponse(statusCode: status, headers: headers, body: body, url: request.url)
        }
    }

    /// Answers `method path` with a JSON body.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match.
    ///   - status: The status code.
    ///   - json: The body, as JSON text.
    ///   - headers: More response headers.
    ///   - delay: How long to wait before answering.
    ///   - latch: Holds the response until the test opens the latch.
    public func stub(
        _ method: HTTPMethod,
        _ path: String,
        status: Int = 200,
        json: String,
        headers: HTTPHeaders = HTTPHeaders(),
        delay: Duration? = nil,
        heldBy latch: AsyncLatch? = nil
    ) {
        var headers = headers
        headers["Content-Type"] = "application/json"
        stub(method, path, status: status, headers: headers, body: Data(json.utf8), delay: delay, heldBy: latch)
    }

    /// Fails `method path` with an error.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match.
    ///   - error: The error to throw.
    public func stub(_ method: HTTPMethod, _ path: String, error: NetworkError) {
        stub(method, path) { _ async throws(NetworkError) -> HTTPResponse in throw error }
    }

    /// Every request received, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// How many requests were received.
    public var requestCount: Int { state.withLock { $0.requests.count } }

    /// How many requests were cancelled while a stub with a `delay` was waiting.
    public var cancellationCount: Int { state.withLock { $0.cancellations } }

    /// Records that a responder saw its request cancelled; custom responders may call it.
    public func recordCancellation() {
        state.withLock { $0.cancellations += 1 }
    }

    /// Waits until at least `count` requests have arrived.
    /// - Parameter count: How many requests to wait for.
    public func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.requests.count >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Finds the stub for the request and runs it.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        let path = decodedPath(
            request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true)?.percentEncodedPath } ?? "")
        let (route, ready) = state.withLock { state in
            state.requests.append(request)
            let count = state.requests.count
            let ready = state.arrivalWaiters.filter { $0.count <= count }.map(\.continuation)
            state.arrivalWaiters.removeAll { $0.count <= count }
            return (state.routes.last { $0.method == method && $0.path == path }, ready)
        }
        for waiter in ready { waiter.resume() }
        guard let route else {
            throw .transport(
                code: .unsupportedURL,
                message: "StubTransport has no stub for \(method) \(request.url?.absoluteString ?? "<no URL>")")
        }
        return try await route.responder(request)
    }
}
