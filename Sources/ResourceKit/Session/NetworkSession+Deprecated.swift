public import Foundation

extension NetworkSession {
    /// How long every call may take, in seconds: ``timeLimit`` as a `TimeInterval`, `0` for none.
    @available(*, deprecated, message: "Use timeLimit, a Duration")
    public nonisolated var timeout: TimeInterval { timeLimit.map(\.seconds) ?? 0 }

    /// Creates a session whose time limit is given in seconds.
    ///
    /// The same as ``init(baseURL:validation:transport:defaultHeaders:encoder:decoder:adapters:authenticator:credentialScope:redirects:retry:timeLimit:clock:redaction:logger:activityDebounce:)``
    /// with `timeout` in seconds: a value that is not positive, not finite, or at least 10⁹ means no limit.
    /// - Parameters:
    ///   - baseURL: The base URL, or a provider asked for it on every request.
    ///   - validation: Decides which responses are successes.
    ///   - transport: Sends the requests.
    ///   - defaultHeaders: Headers for every request.
    ///   - encoder: Encodes JSON bodies.
    ///   - decoder: Decodes JSON responses.
    ///   - adapters: Hooks that may change each request before it is sent.
    ///   - authenticator: Applies a credential to each request and refreshes it.
    ///   - credentialScope: The origins credentials may go to.
    ///   - redirects: How redirects are followed.
    ///   - retry: How failed requests are retried.
    ///   - timeout: How long every call may take, in seconds.
    ///   - clock: Measures deadlines and waits between retries.
    ///   - redaction: What is hidden in log events.
    ///   - logger: Receives events.
    @available(
        *, deprecated,
        message: "Use init(baseURL:…:timeLimit:…), which takes a Duration; timeLimit: nil means no limit"
    )
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
        timeout: TimeInterval,
        clock: some Clock<Duration> = ContinuousClock(),
        redaction: LogRedaction = .standard,
        logger: any NetworkLogging = SilentLogger()
    ) {
        self.init(
            baseURL: baseURL, validation: validation, transport: transport, defaultHeaders: defaultHeaders,
            encoder: encoder, decoder: decoder, adapters: adapters, authenticator: authenticator,
            credentialScope: credentialScope, redirects: redirects, retry: retry,
            timeLimit: Duration.limit(seconds: timeout), clock: clock, redaction: redaction, logger: logger)
    }
}
