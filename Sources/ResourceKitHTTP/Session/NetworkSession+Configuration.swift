public import Foundation

extension NetworkSession {
    /// Everything a session is made with, as one value: build it once, adjust it per environment or test, and
    /// give it to ``NetworkSession/init(configuration:)``.
    ///
    /// ```swift
    /// var configuration = NetworkSession.Configuration(baseURL: "https://api.example.com/v1")
    /// configuration.retry = RetryPolicy(maximumAttempts: 3)
    /// configuration.timeLimit = .seconds(20)
    /// let session = NetworkSession(configuration: configuration)
    /// ```
    ///
    /// Every property but ``baseURL`` starts at the same default as the matching parameter of
    /// ``NetworkSession/init(baseURL:validation:transport:defaultHeaders:encoder:decoder:adapters:authenticator:credentialScope:redirects:retry:timeLimit:clock:redaction:logger:activityDebounce:)``,
    /// which builds this value and makes the same session. A session reads its configuration once, when it is
    /// made: ``NetworkSession/configuration`` returns it, and changing a copy changes no session. The coders are
    /// the exception: ``encoder`` and ``decoder`` are classes, shared by the session and every copy, so setting
    /// one of their properties later changes how the session encodes or decodes.
    public struct Configuration: Sendable {
        /// The base URL, or a provider asked for it on every request.
        public var baseURL: any BaseURLProviding
        /// Decides which responses are successes; `200..<300` (``StatusCodeValidation``) by default.
        public var validation: any ValidationProviding = StatusCodeValidation()
        /// Sends the requests; a new ``URLSessionTransport`` by default.
        public var transport: any HTTPTransport = URLSessionTransport()
        /// Headers for every request; an endpoint's header of the same name wins. `Authorization`,
        /// `Proxy-Authorization` and `Cookie` among them go only to origins in ``credentialScope``.
        public var defaultHeaders = HTTPHeaders()
        /// Encodes JSON bodies. A class: the session uses this instance, so set it up before making the session.
        public var encoder = JSONEncoder()
        /// Decodes JSON responses. A class: the session uses this instance, so set it up before making the session.
        public var decoder = JSONDecoder()
        /// Run in order on every request and redirect hop to an origin in ``credentialScope`` before it is sent.
        public var adapters: [any RequestAdapting] = []
        /// Applies a credential to each request to an origin in ``credentialScope`` and refreshes it, once for
        /// all requests, when the server rejects it; none by default.
        public var authenticator: (any Authenticator)?
        /// The origins adapters, the authenticator and the credentials among ``defaultHeaders`` may go to; only
        /// the base URL's by default.
        public var credentialScope = CredentialScope.baseURL
        /// How redirects are followed, unless an endpoint sets its own; up to 10 hops by default.
        public var redirects = RedirectPolicy.follow
        /// How failed requests are retried, unless an endpoint sets its own; never by default.
        public var retry = RetryPolicy.never
        /// How long every call may take, from its first attempt (adapters and the authenticator included) to its
        /// validated response, unless its endpoint sets its own ``Endpoint/timeLimit``; 60 seconds by default.
        /// Resolving a base URL from a provider such as `DynamicBaseURL` comes before the first attempt and is
        /// not counted. `nil`, or a limit that is not positive or above 10⁹ seconds, means none.
        public var timeLimit: Duration? = .seconds(60)
        /// Measures deadlines and waits between retries; a test can give a manual clock.
        public var clock: any Clock<Duration> = ContinuousClock()
        /// What is hidden in the session's events: its logger's and its diagnostics stream's.
        public var redaction = LogRedaction.standard
        /// Receives the session's events at the levels it asks for; logs nothing by default.
        public var logger: any NetworkLogging = SilentLogger()
        /// How long the activity indicator (``NetworkActivity/isBusy``) stays on after the last request
        /// ended; 300 ms by default, on ``clock``. A negative value counts as zero, and one above 10⁹ seconds
        /// as 10⁹ seconds.
        public var activityDebounce = Duration.milliseconds(300)

        /// A configuration with the given base URL and every other property at its default.
        /// - Parameter baseURL: The base URL, or a provider asked for it on every request.
        public init(baseURL: any BaseURLProviding) {
            self.baseURL = baseURL
        }
    }
}
