public import Foundation
public import ResourceKit

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A transport that answers with canned responses, by method, path and optionally query, and records every
/// request.
///
/// ```swift
/// let stub = StubTransport()
/// stub.stub(.get, "/api/posts/1", json: #"{"id":"1","title":"Hello"}"#)
/// stub.stub(.get, "/api/posts?page=2&perPage=20", json: #"{"items":[]}"#)
/// let session = NetworkSession(baseURL: "https://example.com/api", transport: stub)
/// ```
///
/// A stub whose path has no `?` answers that path with any query. One whose path has a query
/// (`/api/posts?page=2`) answers only requests with exactly those query items, in any order: names and values
/// compared percent-decoded, a repeated name as often as it is given, no item missing or extra (a bare `?`
/// names the empty query). For a request, a stub that names its query wins over one that names none,
/// whichever came first.
///
/// A request with no stub throws `NetworkError/transport(code:message:)` (`unsupportedURL`) naming its method,
/// path and query, and the queries its path is stubbed for.
public final class StubTransport: HTTPTransport {
    /// Produces the response for a request.
    public typealias Responder = @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse

    private struct Route {
        var method: HTTPMethod
        var path: String
        /// The query items, sorted; `nil` matches any query.
        var query: [URLQueryItem]?
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

    /// Answers `method path` with a computed response. A later stub for the same route (method, path and
    /// query, or no query) replaces it.
    ///
    /// Paths are compared decoded, as ``InMemoryBackend/requestLog`` records them: a stub for `/groups/a b`
    /// (or `/groups/a%20b`) answers a request for `/groups/a%20b`. A `?` starts the query (write one in a path
    /// as `%3F`): without one, any query matches; with one, only exactly those items, in any order.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match, such as `/api/posts/1`, optionally with a query: `/api/posts?page=2`.
    ///   - responder: Produces the response; it may wait, throw, or look at the request.
    public func stub(_ method: HTTPMethod, _ path: String, responder: @escaping Responder) {
        state.withLock { state in
            let (path, query) = Self.split(path)
            state.routes.removeAll { $0.method == method && $0.path == path && $0.query == query }
            state.routes.append(Route(method: method, path: path, query: query, responder: responder))
        }
    }

    /// Answers `method path` with a fixed response.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match, optionally with a query.
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
    ///   - path: The URL path to match, optionally with a query.
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
    ///   - path: The URL path to match, optionally with a query.
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

    /// Finds the stub for the request and runs it: one that names the request's query, else one that names
    /// no query.
    /// - Throws: `NetworkError/transport(code:message:)` (`unsupportedURL`) when no stub matches, naming the
    ///   method, path and query; or what the stub's responder throws.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        let components = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true) }
        let path = decodedPath(components?.percentEncodedPath ?? "")
        let received = Self.queryItems(Substring(components?.percentEncodedQuery ?? ""))
        let query = received.sorted(by: Self.precedes)
        let (route, stubbedQueries, ready) = state.withLock { state in
            state.requests.append(request)
            let count = state.requests.count
            let ready = state.arrivalWaiters.filter { $0.count <= count }.map(\.continuation)
            state.arrivalWaiters.removeAll { $0.count <= count }
            let candidates = state.routes.filter { $0.method == method && $0.path == path }
            let route = candidates.last { $0.query == query } ?? candidates.last { $0.query == nil }
            return (route, candidates.compactMap(\.query), ready)
        }
        for waiter in ready { waiter.resume() }
        guard let route else {
            var message = "StubTransport has no stub for \(method) \(request.url?.absoluteString ?? "<no URL>")"
            message += " (path \(path), " + (received.isEmpty ? "no query)" : "query \(Self.describe(received)))")
            if !stubbedQueries.isEmpty {
                let stubbed = stubbedQueries.map { "?" + Self.describe($0) }.joined(separator: ", ")
                message += "; \(method) \(path) is stubbed only for \(stubbed)"
            }
            throw .transport(code: .unsupportedURL, message: message)
        }
        return try await route.responder(request)
    }
}

extension StubTransport {
    /// A stub's path decoded, and its query items sorted (`nil` when it has no `?`).
    static func split(_ target: String) -> (path: String, query: [URLQueryItem]?) {
        guard let mark = target.firstIndex(of: "?") else { return (decodedPath(target), nil) }
        let query = queryItems(target[target.index(after: mark)...]).sorted(by: precedes)
        return (decodedPath(String(target[..<mark])), query)
    }

    /// The items of a percent-encoded query, decoded, in order: `a=1&b` is `a` = `1` and `b` with no value.
    /// Empty items (`a=1&&b`) are skipped; an invalid escape is kept as written.
    static func queryItems(_ encoded: Substring) -> [URLQueryItem] {
        encoded.split(separator: "&", omittingEmptySubsequences: true).map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in String(part).removingPercentEncoding ?? String(part) }
            return URLQueryItem(name: decode(parts[0]), value: parts.count > 1 ? decode(parts[1]) : nil)
        }
    }

    /// An order that makes a query's items comparable whatever order they came in.
    static func precedes(_ lhs: URLQueryItem, _ rhs: URLQueryItem) -> Bool {
        if lhs.name != rhs.name { return lhs.name < rhs.name }
        switch (lhs.value, rhs.value) {
        case (nil, .some): return true
        case (let left?, let right?): return left < right
        default: return false
        }
    }

    /// Query items as a message shows them: decoded, `name=value` joined by `&`.
    static func describe(_ items: [URLQueryItem]) -> String {
        items.map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }.joined(separator: "&")
    }
}
