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
///
/// A responder may throw any error; the request fails with it mapped by `NetworkError.init(_:)`:
///
/// ```swift
/// stub.stub(.get, "/api/posts/1") { try await fixtures.response(for: $0) }
/// ```
public final class StubTransport: HTTPTransport {
    /// Produces the response for a request. What it throws reaches the session mapped with
    /// `NetworkError.init(_:)`: a `NetworkError` as it is, `CancellationError` as `.cancelled`.
    public typealias Responder = @Sendable (URLRequest) async throws -> HTTPResponse
    /// Produces a response whose body arrives as it comes, for ``stream(_:)``. What it throws reaches the
    /// session mapped with `NetworkError.init(_:)`.
    public typealias StreamResponder = @Sendable (URLRequest) async throws -> StreamedResponse

    struct Route: Sendable {
        var method: HTTPMethod
        var path: String
        /// The query items, sorted; `nil` matches any query.
        var query: [URLQueryItem]?
        var responder: Responder
        /// For a streamed stub: what ``stream(_:)`` answers; `responder` reads its whole body.
        var streamer: StreamResponder?
    }

    private struct State: Sendable {
        var routes: [Route] = []
        var requests: [URLRequest] = []
        var cancellations = 0
    }

    private let state = Awaitable(State())

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
    ///   - responder: Produces the response; it may wait, throw any error (the request fails with it mapped
    ///     by `NetworkError.init(_:)`), or look at the request.
    public func stub(_ method: HTTPMethod, _ path: String, responder: @escaping Responder) {
        add(Route(method: method, path: path, query: nil, responder: responder))
    }

    func add(_ route: Route) {
        var route = route
        state.withLock { state in
            (route.path, route.query) = Self.split(route.path)
            state.routes.removeAll { $0.method == route.method && $0.path == route.path && $0.query == route.query }
            state.routes.append(route)
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
                // Clamped like the waits: `Task.sleep` traps on a deadline decades away.
                if let delay { try await Task.sleep(for: min(max(delay, .zero), RealTimeLimit.longest)) }
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
        stub(method, path) { _ in throw error }
    }

    /// Every request received, in order.
    public var requests: [URLRequest] { state.read { $0.requests } }

    /// How many requests were received.
    public var requestCount: Int { state.read { $0.requests.count } }

    /// How many requests were cancelled while the transport held them: a stub with a `delay` waiting, a request
    /// held by a latch, or a streaming stub whose reader went away.
    public var cancellationCount: Int { state.read { $0.cancellations } }

    /// Records that a responder saw its request cancelled; custom responders may call it.
    public func recordCancellation() {
        state.withLock { $0.cancellations += 1 }
        Changes.raise()
    }

    /// Waits until at least `count` requests have arrived, or fails after `timeout`.
    ///
    /// The timeout is real time (`ContinuousClock`), whatever clock the session under test uses. One that is
    /// not positive fails at once unless the requests are already there; one above 10⁹ seconds counts as that.
    /// A call that names no `timeout`, `try await stub.waitForRequests(2)`, waits 5 seconds.
    /// - Parameters:
    ///   - count: How many requests to wait for.
    ///   - timeout: How long to wait; 5 seconds by default.
    /// - Throws: ``WaitTimeout`` (`timedOut` or `cancelled`) whose ``WaitTimeout/seen`` lists the requests that
    ///   arrived, as `METHOD URL`, at the timeout or when the waiting task is cancelled first.
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(5)) async throws(WaitTimeout) {
        _ = try await state.wait(
            for: "\(count) request(s)", timeout: timeout,
            seen: { $0.requests.map { "\($0.httpMethod ?? "GET") \($0.url?.absoluteString ?? "<no URL>")" } },
            until: { $0.requests.count >= count }
        ).get()
    }

    /// Finds the stub for the request and runs it: one that names the request's query, else one that names
    /// no query.
    /// - Throws: `NetworkError/transport(code:message:)` (`unsupportedURL`) when no stub matches, naming the
    ///   method, path and query; or what the stub's responder throws, mapped with `NetworkError.init(_:)`.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        // A streamed body (a file, a form with files) is read here, so that stubs and the log see its bytes.
        let request = try request.readingBodyStream()
        let route = try route(for: request)
        do {
            return try await route.responder(request)
        } catch {
            throw NetworkError(error)
        }
    }

    /// Records the request and finds its stub.
    func route(for request: URLRequest) throws(NetworkError) -> Route {
        let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        let components = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true) }
        let path = decodedPath(components?.percentEncodedPath ?? "")
        let received = Self.queryItems(Substring(components?.percentEncodedQuery ?? ""))
        let query = received.sorted(by: Self.precedes)
        let (route, stubbedQueries) = state.withLock { state in
            state.requests.append(request)
            let candidates = state.routes.filter { $0.method == method && $0.path == path }
            let route = candidates.last { $0.query == query } ?? candidates.last { $0.query == nil }
            return (route, candidates.compactMap(\.query))
        }
        Changes.raise()
        guard let route else {
            var message = "StubTransport has no stub for \(method) \(request.url?.absoluteString ?? "<no URL>")"
            message += " (path \(path), " + (received.isEmpty ? "no query)" : "query \(Self.describe(received)))")
            if !stubbedQueries.isEmpty {
                let stubbed = stubbedQueries.map { "?" + Self.describe($0) }.joined(separator: ", ")
                message += "; \(method) \(path) is stubbed only for \(stubbed)"
            }
            throw .transport(code: .unsupportedURL, message: message)
        }
        return route
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
