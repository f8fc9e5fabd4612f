public import Foundation

extension Endpoint {
    /// This request's time limit in seconds: ``timeLimit`` as a `TimeInterval`.
    ///
    /// Setting a value that is not positive, not finite or at least 10⁹ sets a ``timeLimit`` of `.zero`: no
    /// limit for this request, as before.
    @available(*, deprecated, message: "Use timeLimit, a Duration: endpoint.timeLimit = .milliseconds(800)")
    public var timeout: TimeInterval? {
        get { timeLimit.map(\.seconds) }
        set { timeLimit = newValue.map { Duration.limit(seconds: $0) ?? .zero } }
    }

    /// Creates an endpoint whose time limit is given in seconds.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The path relative to the base URL, or an absolute URL string.
    ///   - query: Query items as name–value pairs, in name order.
    ///   - headers: Headers for this request.
    ///   - body: The request body.
    ///   - timeout: How long the whole call may take, in seconds (see ``timeout``).
    @available(*, deprecated, message: "Use init(_:_:query:headers:body:timeLimit:), which takes a Duration")
    public init(
        _ method: HTTPMethod = .get,
        _ path: String,
        query: [String: String] = [:],
        headers: HTTPHeaders = HTTPHeaders(),
        body: RequestBody? = nil,
        timeout: TimeInterval?
    ) {
        self.init(method, path, query: query, headers: headers, body: body)
        self.timeout = timeout
    }

    /// Creates an endpoint with query items in order, whose time limit is given in seconds.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The path relative to the base URL, or an absolute URL string.
    ///   - queryItems: The query items, in order.
    ///   - headers: Headers for this request.
    ///   - body: The request body.
    ///   - timeout: How long the whole call may take, in seconds (see ``timeout``).
    @available(*, deprecated, message: "Use init(_:_:queryItems:headers:body:timeLimit:), which takes a Duration")
    public init(
        _ method: HTTPMethod = .get,
        _ path: String,
        queryItems: [URLQueryItem],
        headers: HTTPHeaders = HTTPHeaders(),
        body: RequestBody? = nil,
        timeout: TimeInterval?
    ) {
        self.init(method, path, queryItems: queryItems, headers: headers, body: body)
        self.timeout = timeout
    }
}

extension Duration {
    /// `seconds` as a time limit, for the deprecated `TimeInterval` APIs; `nil` for a value that is not
    /// positive, not finite or at least 10⁹, which meant no limit (and which `Duration.seconds(_:)` may trap
    /// on).
    static func limit(seconds: TimeInterval) -> Duration? {
        guard seconds.isFinite, seconds > 0, seconds < 1e9 else { return nil }
        return .seconds(seconds)
    }
}
