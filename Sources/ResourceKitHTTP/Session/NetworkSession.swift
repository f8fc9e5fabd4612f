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
    /// What the session was made with: its base URL, validation, transport, headers, coders, adapters,
    /// authenticator, policies, clock, redaction and logger.
    public nonisolated let configuration: Configuration
    /// The library's version, such as `0.3.0`.
    public static let libraryVersion = "0.3.0"
    /// `ResourceKit/<version>`: the `User-Agent` of requests for which neither the endpoint nor the session
    /// sets one.
    public static let defaultUserAgent = "ResourceKit/\(libraryVersion)"

    // The configuration's parts, under the names the request path reads them by.
    nonisolated var baseURLProvider: any BaseURLProviding { configuration.baseURL }
    nonisolated var validationProvider: any ValidationProviding { configuration.validation }
    nonisolated var transport: any HTTPTransport { configuration.transport }
    nonisolated var defaultHeaders: HTTPHeaders { configuration.defaultHeaders }
    nonisolated var encoder: JSONEncoder { configuration.encoder }
    nonisolated var decoder: JSONDecoder { configuration.decoder }
    nonisolated var adapters: [any RequestAdapting] { configuration.adapters }
    nonisolated var credentialScope: CredentialScope { configuration.credentialScope }
    nonisolated var redirects: RedirectPolicy { configuration.redirects }
    nonisolated var retry: RetryPolicy { configuration.retry }
    nonisolated var timeLimit: Duration? { configuration.timeLimit }
    nonisolated var redaction: LogRedaction { configuration.redaction }
    let authentication: (any AuthenticationHandling)?
    // `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) reaches it, part of the API surface.
    @usableFromInline nonisolated let timeline: Timeline
    /// Now on the session's clock (``Configuration/clock``), as time since the session was made: what the
    /// layers above date answers with.
    @inlinable package nonisolated var now: Duration { timeline.now }
    /// Returns after `duration` on the session's clock (at once for one that is not positive); throws when the
    /// calling task is cancelled first.
    package nonisolated func sleep(for duration: Duration) async throws {
        try await timeline.sleep(until: timeline.now + duration)
    }
    let deadlines: DeadlineScheduler
    // `@usableFromInline`: the inlinable read path reaches it, part of the API surface.
    @usableFromInline package nonisolated let feed: DiagnosticsFeed
    /// The request the last call's events named: the next call of the same method and URL names it the same,
    /// with no new subject to make (and to free on the listener's thread).
    let lastRequestSubject = Locked<DiagnosticSubject?>(nil)
    nonisolated let inFlight: InFlightRequests
    /// Whether ``defaultHeaders`` hold `Authorization`, `Proxy-Authorization` or `Cookie`.
    let defaultHeadersCarryCredentials: Bool
    /// The base URL taken apart once, when the provider is a `URL` or a `String` (see `URLBuilder.Base`).
    let fixedBase: Result<URLBuilder.Base, NetworkError>?
    /// The header fields of a request that adds none to the defaults, merged and checked once.
    let fixedHeaders: Result<[String: String], NetworkError>?

    /// Creates a session from a configuration.
    ///
    /// ```swift
    /// var configuration = NetworkSession.Configuration(baseURL: "https://api.example.com/v1")
    /// configuration.retry = RetryPolicy(maximumAttempts: 3)
    /// let session = NetworkSession(configuration: configuration)
    /// ```
    /// - Parameter configuration: Everything the session is made with; each property's documentation says what
    ///   it does and its default.
    public init(configuration: Configuration) {
        self.configuration = configuration
        // The silent logger takes nothing: no event is built for it.
        feed = DiagnosticsFeed(logger: configuration.logger is SilentLogger ? nil : configuration.logger)
        self.timeline = Timeline(configuration.clock)
        self.deadlines = DeadlineScheduler(timeline: timeline)
        self.inFlight = InFlightRequests(
            counter: ActivityCounter(debounce: configuration.activityDebounce, timeline: timeline))
        self.defaultHeadersCarryCredentials = Redirect.credentialHeaders.contains {
            configuration.defaultHeaders[$0] != nil
        }
        self.fixedBase = URLBuilder.Base.fixed(for: configuration.baseURL)
        self.fixedHeaders = Self.fixedHeaderFields(
            defaults: configuration.defaultHeaders, carryCredentials: defaultHeadersCarryCredentials)
        self.authentication = configuration.authenticator.map { Self.flight(for: $0) }
    }

    /// Creates a session: the same as ``init(configuration:)`` with a ``Configuration`` of these values.
    /// - Parameters:
    ///   - baseURL: The base URL, or a provider asked for it on every request.
    ///   - validation: Decides which responses are successes; `200..<300` by default.
    ///   - transport: Sends the requests; `URLSessionTransport` by default.
    ///   - defaultHeaders: Headers for every request; an endpoint's header of the same name wins.
    ///     `Authorization`, `Proxy-Authorization` and `Cookie` among them go only to origins in
    ///     `credentialScope`: to every request and redirect hop to such an origin, to none elsewhere. The
    ///     endpoint's own credential headers go only to the endpoint's origin, also after redirects.
    ///   - encoder: Encodes JSON bodies.
    ///   - decoder: Decodes JSON responses.
    ///   - adapters: Hooks that may change each request before it is sent, such as adding a fixed API key.
    ///     They run only for requests and redirect hops to origins in `credentialScope`.
    ///   - authenticator: Applies a credential to each request and redirect hop to an origin in
    ///     `credentialScope` and refreshes it, once for all requests, when the server rejects it.
    ///   - credentialScope: The origins adapters, the authenticator and the credentials among
    ///     `defaultHeaders` may go to; only the base URL's by default. Every redirect hop gets what a direct
    ///     request to its origin would get.
    ///   - redirects: How redirects are followed; up to 10 hops by default.
    ///   - retry: How failed requests are retried; never by default.
    ///   - timeLimit: How long every call may take: from the first attempt (its adapters and authenticator
    ///     included) through redirects, retries and their waits to the validated response; 60 seconds by
    ///     default. A base URL's resolution by a provider comes before the first attempt and is not counted. An endpoint's
    ///     ``Endpoint/timeLimit`` replaces it. `nil`, or a limit that is not positive or above 10⁹ seconds,
    ///     means none.
    ///   - clock: Measures deadlines and waits between retries; a test can pass a manual clock.
    ///   - redaction: What is hidden in the session's events (its logger's and its diagnostics stream's): user
    ///     info and secret query items in every URL, and secret header values in an event's error.
    ///   - logger: Receives events; logs nothing by default.
    ///   - activityDebounce: How long the activity indicator (``NetworkActivity/isBusy``)
    ///     stays on after the last request ended.
    public init(
        baseURL: any BaseURLProviding,
        validation: any ValidationProviding = StatusCodeValidation(),
        transport: any HTTPTransport = URLSessionTransport(),
        defaultHeaders: HTTPHeaders = HTTPHeaders(),
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        adapters: [any RequestAdapting] = [],
        authenticator: (any Authenticator)? = nil,
        credentialScope: CredentialScope = .baseURL,
        redirects: RedirectPolicy = .follow,
        retry: RetryPolicy = .never,
        timeLimit: Duration? = .seconds(60),
        clock: some Clock<Duration> = ContinuousClock(),
        redaction: LogRedaction = .standard,
        logger: any NetworkLogging = SilentLogger(),
        activityDebounce: Duration = .milliseconds(300)
    ) {
        var configuration = Configuration(baseURL: baseURL)
        configuration.validation = validation
        configuration.transport = transport
        configuration.defaultHeaders = defaultHeaders
        configuration.encoder = encoder
        configuration.decoder = decoder
        configuration.adapters = adapters
        configuration.authenticator = authenticator
        configuration.credentialScope = credentialScope
        configuration.redirects = redirects
        configuration.retry = retry
        configuration.timeLimit = timeLimit
        configuration.clock = clock
        configuration.redaction = redaction
        configuration.logger = logger
        configuration.activityDebounce = activityDebounce
        self.init(configuration: configuration)
    }

    /// How many requests wait on a credential refresh now; Observation hears when it changes, for the package's
    /// tests.
    nonisolated var authenticationWaiters: Int { authentication?.waiting ?? 0 }

    private static func flight<A: Authenticator>(for authenticator: A) -> any AuthenticationHandling {
        AuthenticationFlight(authenticator)
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
        if Self.uploads(endpoint) { return try await upload(endpoint) }
        let (request, base) = try await buildRequest(for: endpoint)
        let deadline = Self.deadline(endpoint.timeLimit ?? timeLimit)
        let exchange = Exchange(
            request: request, base: base, ownCredentials: Redirect.credentials(in: endpoint.headers),
            redirects: endpoint.redirects ?? redirects, retry: endpoint.retry ?? retry, deadline: deadline)
        return try await perform(exchange)
    }

    /// Whether the endpoint's body streams, so that the session's time limit does not apply to it.
    static func uploads(_ endpoint: Endpoint) -> Bool {
        endpoint.progress != nil || endpoint.body?.streams == true
    }

    /// Sends an endpoint whose body streams. The session's time limit does not apply (a healthy upload may
    /// take minutes): the endpoint's own ``Endpoint/timeLimit`` does, and the transport's inactivity timeout.
    /// Its upload progress (ResourceKitTransfer's `Endpoint.uploadProgress`) finishes when the call ends.
    private nonisolated func upload(_ endpoint: Endpoint) async throws(NetworkError) -> HTTPResponse {
        defer { endpoint.progress?.report(.finished) }
        let (request, base) = try await buildRequest(for: endpoint)
        let exchange = Exchange(
            request: request, base: base, ownCredentials: Redirect.credentials(in: endpoint.headers),
            redirects: endpoint.redirects ?? redirects, retry: endpoint.retry ?? retry,
            deadline: Self.deadline(endpoint.timeLimit))
        return try await perform(exchange)
    }

    /// Sends the endpoint and returns as soon as the response's head has arrived, with its body as it comes.
    ///
    /// Everything `send` does applies until the head: credentials and adapters, redirects (the body of a
    /// `3xx` is discarded), the retry policy, validation of the status, and the time limit, which ends when
    /// the head arrives (for a request body that streams, only the endpoint's own ``Endpoint/timeLimit``, as
    /// for ``response(for:)``; its upload progress finishes when this returns or throws). The body is then yours to read, as chunks or as lines (`lines(maximumLength:)`, ResourceKitTransfer),
    /// with no time limit of the session's: a body that stops arriving fails by the transport's inactivity
    /// timeout (60 s for ``URLSessionTransport``). A status the validation provider rejects fails here, its
    /// body's first megabyte read for the error, as with ``response(for:)``; a response that is not a success
    /// (`2xx`) and that validation accepts arrives with its body read the same way, its first megabyte in
    /// memory. Cancelling the task that reads the body, or dropping the body unread, stops the transfer.
    /// - Parameter endpoint: What to send.
    /// - Returns: The response, its body still arriving.
    /// - Throws: ``NetworkError`` when no acceptable head arrived.
    public nonisolated func bytes(_ endpoint: Endpoint) async throws(NetworkError) -> StreamedResponse {
        // An upload's progress ends with the head: the server has what it answered.
        defer { endpoint.progress?.report(.finished) }
        let (request, base) = try await buildRequest(for: endpoint)
        let deadline = Self.deadline(endpoint.timeLimit ?? (Self.uploads(endpoint) ? nil : timeLimit))
        var exchange = Exchange(
            request: request, base: base, ownCredentials: Redirect.credentials(in: endpoint.headers),
            redirects: endpoint.redirects ?? redirects, retry: endpoint.retry ?? retry, deadline: deadline)
        exchange.streams = true
        let response = try await perform(exchange)
        return StreamedResponse(
            statusCode: response.statusCode, headers: response.headers, url: response.url,
            body: response.stream ?? ResponseBody(response.body))
    }

    /// The deadline for a time limit; `nil` (no deadline) for none, or for a limit that is not positive or
    /// longer than about 31 years, as `URLSession` treats such values: no deadline can overflow the clock.
    static func deadline(_ limit: Duration?) -> Duration? {
        guard let limit, limit > .zero, limit <= .longest else { return nil }
        return limit
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
