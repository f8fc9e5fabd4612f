public import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends ``Endpoint``s to a server and decodes the answers.
///
/// A session is built once and shared. Its configuration never changes, so every method runs without
/// waiting for the actor: many requests proceed in parallel.
///
/// ```swift
/// let session = NetworkSession(baseURL: "https://api.example.com/v1")
/// let post: Post = try await session.send(Endpoint(.get, "posts").appending(id: 42))
/// ```
public actor NetworkSession {
    /// Resolved for every request.
    public nonisolated let baseURLProvider: any BaseURLProviding
    /// Decides which responses are successes.
    public nonisolated let validationProvider: any ValidationProviding
    /// Sends the requests.
    public nonisolated let transport: any HTTPTransport
    /// Headers sent with every request unless the endpoint sets the same name.
    public nonisolated let defaultHeaders: HTTPHeaders
    /// Encodes JSON bodies.
    public nonisolated let encoder: JSONEncoder
    /// Decodes JSON responses.
    public nonisolated let decoder: JSONDecoder
    /// Run in order on every request before it is sent.
    public nonisolated let adapters: [any RequestAdapting]
    /// Receives request and response events.
    public nonisolated let logger: any NetworkLogging

    /// Creates a session.
    /// - Parameters:
    ///   - baseURL: The base URL, or a provider asked for it on every request.
    ///   - validation: Decides which responses are successes; `200..<300` by default.
    ///   - transport: Sends the requests; `URLSessionTransport` by default.
    ///   - defaultHeaders: Headers for every request; an endpoint's header of the same name wins.
    ///   - encoder: Encodes JSON bodies.
    ///   - decoder: Decodes JSON responses.
    ///   - adapters: Hooks that may change each request before it is sent, such as authentication.
    ///   - logger: Receives events; logs nothing by default. Secret header values are always redacted.
    public init(
        baseURL: any BaseURLProviding,
        validation: any ValidationProviding = StatusCodeValidation(),
        transport: any HTTPTransport = URLSessionTransport(),
        defaultHeaders: HTTPHeaders = HTTPHeaders(),
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        adapters: [any RequestAdapting] = [],
        logger: any NetworkLogging = SilentLogger()
    ) {
        self.baseURLProvider = baseURL
        self.validationProvider = validation
        self.transport = transport
        self.defaultHeaders = defaultHeaders
        self.encoder = encoder
        self.decoder = decoder
        self.adapters = adapters
        self.logger = logger
    }

    /// Sends the endpoint and decodes the response body.
    ///
    /// An empty body (`204`, `205`, `HEAD`, `Content-Length: 0`) decodes to `nil` for an optional type and
    /// to ``EmptyResponse``; `Data` returns the raw body.
    /// - Parameters:
    ///   - endpoint: What to send.
    ///   - type: The type to decode.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError``.
    public nonisolated func send<Response: Decodable>(
        _ endpoint: Endpoint,
        as type: Response.Type = Response.self
    ) async throws(NetworkError) -> Response {
        let response = try await response(for: endpoint)
        return try decode(Response.self, from: response)
    }

    /// Sends the endpoint and ignores the response body.
    /// - Parameter endpoint: What to send.
    /// - Throws: ``NetworkError``.
    public nonisolated func send(_ endpoint: Endpoint) async throws(NetworkError) {
        _ = try await response(for: endpoint)
    }

    /// Sends the endpoint and returns the raw body.
    /// - Parameter endpoint: What to send.
    /// - Returns: The response body.
    /// - Throws: ``NetworkError``.
    public nonisolated func data(for endpoint: Endpoint) async throws(NetworkError) -> Data {
        try await response(for: endpoint).body
    }

    /// Sends the endpoint and returns the validated response: status, headers and body.
    /// - Parameter endpoint: What to send.
    /// - Returns: The response.
    /// - Throws: ``NetworkError``, including the validation provider's verdict.
    public nonisolated func response(for endpoint: Endpoint) async throws(NetworkError) -> HTTPResponse {
        var request = try await makeURLRequest(for: endpoint)
        for adapter in adapters {
            request = try await adapter.adapt(request)
        }
        // Adapters set headers themselves: nothing they add may break the request apart either.
        if !adapters.isEmpty { try HeaderValidation.check(request.allHTTPHeaderFields ?? [:]) }
        let url = request.url?.absoluteString ?? ""
        if logger.minimumLevel <= .debug {
            let headers = HTTPHeaders(request.allHTTPHeaderFields ?? [:])
            logger.log(
                .debug,
                .request(method: request.httpMethod ?? "GET", url: url, headers: NetworkLogEvent.redact(headers)))
        }
        if Task.isCancelled { throw .cancelled }
        let start = ContinuousClock.now
        do {
            var response = try await transport.send(request)
            // A transport that reports no URL answered the request sent: relative `Link`s resolve against it.
            if response.url == nil { response.url = request.url }
            if logger.minimumLevel <= .debug {
                logger.log(
                    .debug,
                    .response(
                        status: response.statusCode, url: url, headers: NetworkLogEvent.redact(response.headers),
                        bodySize: response.body.count, duration: ContinuousClock.now - start))
            }
            try validationProvider.validate(response)
            return response
        } catch {
            logger.log(.error, .failure(url: url, error: error))
            throw error
        }
    }

    /// Decodes a response body the way ``send(_:as:)`` does.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - response: The response.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError/decoding(type:codingPath:message:)``.
    public nonisolated func decode<Response: Decodable>(
        _ type: Response.Type,
        from response: HTTPResponse
    ) throws(NetworkError) -> Response {
        // An empty body is checked first, so that `Data?` decodes it to `nil` like every optional, not to
        // `Optional(Data())`.
        if response.body.isEmpty {
            if let empty = Response.self as? any EmptyBodyRepresentable.Type,
                let value = empty.emptyBodyValue as? Response
            {
                return value
            }
            if let data = response.body as? Response { return data }
            throw .decoding(type: "\(Response.self)", codingPath: "", message: "the response body is empty")
        }
        if let data = response.body as? Response { return data }
        do {
            return try decoder.decode(Response.self, from: response.body)
        } catch let error as DecodingError {
            throw NetworkError(decoding: error, type: "\(Response.self)")
        } catch {
            throw NetworkError(error)
        }
    }
}
