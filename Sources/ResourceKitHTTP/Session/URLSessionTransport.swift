#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// The default transport: `URLSession` data tasks.
///
/// Every task gets a delegate of its own, whatever session it runs on, so that:
/// - redirects are never followed by `URLSession`: the `3xx` response comes back to ``NetworkSession``,
///   which follows it under its ``RedirectPolicy`` and keeps credentials on their origin;
/// - an authentication challenge (a `401` with `WWW-Authenticate: Basic`, for example) is answered as the
///   `401` response it is, with its headers and an empty body, instead of waiting for credentials (on
///   Linux, `URLSession` otherwise never completes such a request).
///
/// A connection that the server closes before any byte of a response fails with
/// ``NetworkError/transport(code:message:)`` and `networkConnectionLost` on every platform (on Linux,
/// `URLSession` reports it as `badServerResponse`), so a ``RetryPolicy`` retries it for idempotent requests
/// and nowhere else.
///
/// It runs data tasks with a task delegate rather than `data(for:delegate:)`: on Linux that delegate is never
/// asked about redirects, and cancelling `data(for:)` can deadlock in swift-corelibs-foundation releases up to
/// 6.3.3 (swift-corelibs-foundation #5412). On Linux, a session the transport makes itself (every initializer
/// but ``init(session:)``) runs completion handlers and delegate calls at once on `URLSession`'s own queue, as
/// `data(for:)` runs its completion; on a session you pass in, they go through its delegate queue, which costs
/// a thread wake-up a request (README, Performance).
///
/// Cancelling the calling task cancels the `URLSessionTask`. ``NetworkSession`` enforces each call's
/// time limit itself; `URLSession`'s own timeouts (whole seconds on Linux, measuring inactivity) still end a
/// request that outlives them. A timeout that is not positive, not finite, or above 10⁹ seconds, in the
/// transport's configuration or in a request's `timeoutInterval`, means none (10⁹ seconds): Linux's
/// `URLSession` would crash converting it to milliseconds.
public struct URLSessionTransport: HTTPTransport {
    /// The session that runs the data tasks.
    ///
    /// On Linux, when the transport made the session, its completion handlers and delegate calls run on
    /// `URLSession`'s own queue rather than on an operation queue, and its delegate is the transport's. A task
    /// you run on it yourself needs a completion handler (one without reports to no one), which must not call a
    /// task's `cancel()`, `resume()` or `suspend()`, which wait for that queue: hand such work to another queue,
    /// or run your own tasks on a session of your own.
    public let session: URLSession
    /// Why no request can run on `session`, if its configuration would crash `URLSession`.
    let unusable: String?
    /// The session of streamed requests, made on first use: `URLSession` on Linux hands a body over as it
    /// arrives only to a session's delegate, never to a task's.
    let streaming: StreamingSession
    /// The delegate of ``session`` when the transport made it on Linux: the tasks' bodies come to it as they
    /// arrive, so that one past ``maximumResponseBodySize`` is cancelled. `nil` on a session you pass in.
    let router: TaskRouter?

    /// The most bytes of a response body ``send(_:)`` holds in memory: 64 MiB by default. A longer body fails the
    /// request with ``NetworkError/invalidResponse(_:)``. On a session the transport makes on Linux the request
    /// is cancelled as soon as the body passes the bound, so a server that never ends a body cannot fill memory;
    /// on a session you pass in, and on Apple platforms, where `URLSession` gathers the body itself, the bound is
    /// checked once the body has arrived. Read longer bodies with ``NetworkSession/bytes(_:)`` or
    /// `NetworkSession.download(_:to:progress:)` (ResourceKitTransfer), which stream them. A value below 1 counts as 1.
    public var maximumResponseBodySize = 64 << 20

    /// The message of the error for a connection closed before any byte of a response.
    static let closedBeforeAnsweringMessage = "the server closed the connection before answering"

    /// Creates a transport on an existing session.
    ///
    /// Completion handlers come through the session's delegate queue, as the session was made; on Linux that
    /// wakes one more thread a request than a session the transport makes itself.
    ///
    /// On Linux, give the session a configuration with no URL cache (`urlCache = nil`):
    /// swift-corelibs-foundation crashes the process ("Trying to access a behaviour for a task that in not in
    /// the registry") when a request is cancelled just as a response it would cache completes. The other
    /// initializers take care of it. A `timeoutIntervalForRequest` that is not finite or above 10¹⁵ seconds
    /// (too many milliseconds for an `Int`) would crash it too: every request on such a session fails with
    /// ``NetworkError/invalidRequest(_:)`` instead; ``init(configuration:cookieStorage:)`` clamps it.
    /// - Parameter session: The session to use.
    public init(session: URLSession) {
        self.init(session: session, router: nil)
    }

    private init(session: URLSession, router: TaskRouter?) {
        self.session = session
        self.router = router
        self.streaming = StreamingSession(configuration: session.configuration)
        // platforms: swift-corelibs-foundation traps on a timeout it cannot turn into milliseconds; CFNetwork does
        // not
        #if canImport(FoundationNetworking)
            let timeout = session.configuration.timeoutIntervalForRequest
            self.unusable =
                Self.isUsableByFoundation(timeout)
                ? nil : "the URLSession's timeoutIntervalForRequest (\(timeout)) is not a usable number of seconds"
        #else
            self.unusable = nil
        #endif
    }

    /// Creates a transport with its own session, which stores no cookies and caches nothing.
    /// - Parameters:
    ///   - timeout: The inactivity timeout of `URLSession` (whole seconds on Linux); 60 seconds by default. One
    ///     that is not positive or above 10⁹ seconds means none. The time limit of a call is
    ///     ``NetworkSession/Configuration/timeLimit`` or the endpoint's ``Endpoint/timeLimit``.
    ///   - maximumConnectionsPerHost: How many connections to one host may be open at once; a value below 1
    ///     counts as 1.
    ///   - cookieStorage: Where cookies are kept between requests; `nil` (the default) keeps none, so no
    ///     `Set-Cookie` from one response is sent back with the next request.
    public init(
        timeout: Duration = .seconds(60),
        maximumConnectionsPerHost: Int = 16,
        cookieStorage: HTTPCookieStorage? = nil
    ) {
        // `seconds` is computed from the whole duration, so a huge one cannot trap; it is clamped below.
        self.init(
            timeoutSeconds: timeout.seconds, maximumConnectionsPerHost: maximumConnectionsPerHost,
            cookieStorage: cookieStorage)
    }

    private init(timeoutSeconds: TimeInterval, maximumConnectionsPerHost: Int, cookieStorage: HTTPCookieStorage?) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.inactivityTimeout(timeoutSeconds)
        configuration.httpMaximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        Self.setCookies(cookieStorage, in: configuration)
        let (session, router) = Self.makeSession(configuration)
        self.init(session: session, router: router)
    }

    /// Creates a transport with a session built from a copy of `configuration`, which stores no cookies
    /// unless you pass a `cookieStorage`.
    ///
    /// On Linux the session gets no URL cache, whatever `configuration` says: swift-corelibs-foundation
    /// crashes the process when a request is cancelled just as a response it would cache completes. A
    /// `timeoutIntervalForRequest` that is not positive, not finite, or above 10⁹ seconds becomes 10⁹ seconds
    /// (none, in effect). `configuration` itself is not changed.
    /// - Parameters:
    ///   - configuration: The configuration.
    ///   - cookieStorage: Where cookies are kept between requests; `nil` (the default) keeps none, even
    ///     when `configuration` has a cookie store (`.default` and `.ephemeral` do).
    public init(configuration: URLSessionConfiguration, cookieStorage: HTTPCookieStorage? = nil) {
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        // platforms: swift-corelibs-foundation crashes a cancelled request whose response it would cache; CFNetwork
        // does not
        #if canImport(FoundationNetworking)
            configuration.urlCache = nil
        #endif
        configuration.timeoutIntervalForRequest = Self.inactivityTimeout(configuration.timeoutIntervalForRequest)
        Self.setCookies(cookieStorage, in: configuration)
        let (session, router) = Self.makeSession(configuration)
        self.init(session: session, router: router)
    }

    /// A session the transport makes itself. On Linux its completion handlers and delegate calls run at once on
    /// `URLSession`'s own queue (``InlineDelegateQueue``), as `data(for:)` runs its completion, instead of waking
    /// a thread of an operation queue for each request.
    private static func makeSession(_ configuration: URLSessionConfiguration) -> (URLSession, TaskRouter?) {
        // platforms: on Linux the body comes through a delegate on URLSession's own queue, bounded as it arrives (see
        // InlineDelegateQueue); Apple platforms keep their own delivery
        #if canImport(FoundationNetworking)
            let router = TaskRouter()
            return (
                URLSession(configuration: configuration, delegate: router, delegateQueue: InlineDelegateQueue()), router
            )
        #else
            return (URLSession(configuration: configuration), nil)
        #endif
    }

    /// The timeout `URLSession` gets for `seconds`: itself when positive, finite and at most 10⁹ (about 31
    /// years), otherwise 10⁹, which means none in effect, as ``NetworkSession`` reads such a timeout.
    static func inactivityTimeout(_ seconds: TimeInterval) -> TimeInterval {
        seconds.isFinite && seconds > 0 && seconds <= Duration.longestSeconds ? seconds : Duration.longestSeconds
    }

    /// Whether swift-corelibs-foundation can turn the timeout into milliseconds without trapping
    /// (`Int(seconds) * 1000`): NaN, infinities and values past `Int.max / 1000` cannot.
    static func isUsableByFoundation(_ seconds: TimeInterval) -> Bool {
        seconds.isFinite && abs(seconds) <= 1e15
    }

    private static func setCookies(_ storage: HTTPCookieStorage?, in configuration: URLSessionConfiguration) {
        configuration.httpCookieStorage = storage
        configuration.httpShouldSetCookies = storage != nil
        configuration.httpCookieAcceptPolicy = storage == nil ? .never : .always
    }

    /// Runs a data task for the request. A redirect comes back as the `3xx` response; an authentication
    /// challenge as its `401` response.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let handle = TaskHandle(maximumBodySize: maximumResponseBodySize)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                start(request, handle: handle) { result in
                    // Handed over under the handle's lock, not as the continuation's value: resumed from
                    // `URLSession`'s queue, a continuation orders the two threads by an atomic of the runtime that
                    // ThreadSanitizer cannot see (swiftlang/swift#57803), and it would report the caller's reads of
                    // what this thread made.
                    handle.keep(result)
                    continuation.resume()
                }
            }
        } onCancel: {
            handle.cancel()
        }
        return try handle.takeResult().get()
    }

    /// Answers an authentication challenge as ``reject(_:_:remember:)`` says, from ``waitingCalls``: the answer
    /// cancels the task, which waits for `URLSession`'s queue, where a session the transport made calls its
    /// delegate.
    static func answer(
        _ challenge: URLAuthenticationChallenge,
        _ completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void,
        remember: (HTTPURLResponse) -> Void
    ) {
        let answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = {
            disposition, credential in
            waitingCalls.async { completionHandler(disposition, credential) }
        }
        reject(challenge, answer, remember: remember)
    }

    /// Answers an authentication challenge with its own response: `remember` keeps the `401` (or `407`) the
    /// server sent, and the protection space is rejected, so the task ends and the caller gets that response.
    /// A challenge without a response is left to `URLSession`.
    static func reject(
        _ challenge: URLAuthenticationChallenge,
        _ completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void,
        remember: (HTTPURLResponse) -> Void
    ) {
        guard let response = challenge.failureResponse as? HTTPURLResponse else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        remember(response)
        completionHandler(.rejectProtectionSpace, nil)
    }

    /// Where the transport calls what waits for `URLSession`'s queue (a task's `cancel()`, a challenge's answer):
    /// a serial queue of its own, which gets a thread of its own. A global queue would not do: its few threads
    /// (as many as cores) blocked there starve every other queue of the process, `URLSession`'s included.
    static let waitingCalls = DispatchQueue(label: "ResourceKit.URLSessionTransport.waitingCalls")

    /// `URLSession` sends a streamed body again from its start (a connection that closed as it was reused):
    /// a fresh stream of the same body, or, for a caller's stream, which cannot be read twice, one that fails,
    /// so that the transfer ends rather than send the body short.

    static func restartBody(
        _ body: BodyInputStream?, stop: @escaping @Sendable () -> Void,
        _ completionHandler: @Sendable (InputStream?) -> Void
    ) {
        completionHandler(body.map { Platform.sessionStream(for: $0.restarted(), stop: stop) })
    }

    /// The request as `URLSession` gets it: a streamed body as ``Platform/sessionStream(for:stop:)`` hands it
    /// over, and the library's stream of that body, from which a restart makes a fresh one.
    static func prepared(
        _ request: URLRequest, stop: @escaping @Sendable () -> Void
    ) -> (URLRequest, BodyInputStream?) {
        guard let body = request.httpBodyStream as? BodyInputStream else { return (request, nil) }
        var request = request
        request.httpBodyStream = Platform.sessionStream(for: body, stop: stop)
        return (request, body)
    }
}

extension URLSessionTransport: CallbackTransport {
    /// Starts a data task; `completion` runs once, with the response, the error, or `.cancelled` after
    /// the returned closure ran.
    func start(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, NetworkError>) -> Void
    ) -> any StoppableRequest {
        let handle = TaskHandle(maximumBodySize: maximumResponseBodySize)
        start(request, handle: handle, completion: completion)
        return handle
    }

    /// Starts a data task held by `handle`, which may have been cancelled already.
    private func start(
        _ request: URLRequest,
        handle: TaskHandle,
        completion: @escaping @Sendable (Result<HTTPResponse, NetworkError>) -> Void
    ) {
        if let unusable {
            completion(.failure(.invalidRequest(unusable)))
            return
        }
        var request = request
        // An adapter may have set any `timeoutInterval`; Linux's `URLSession` traps on the ones it cannot convert.
        let timeout = Self.inactivityTimeout(request.timeoutInterval)
        if timeout != request.timeoutInterval { request.timeoutInterval = timeout }
        let (prepared, body) = Self.prepared(request) { [weak handle] in handle?.cancel() }
        request = prepared
        handle.uploadBody = body
        if let router {
            // No completion handler: the body comes to the handle through the session's delegate, on
            // `URLSession`'s queue, chunk by chunk, and is bounded there.
            let task = session.dataTask(with: request)
            handle.onCompletion(completion)
            router.register(handle, for: task.taskIdentifier)
            handle.start(task)
            return
        }
        let limit = handle.maximumBodySize
        let task = session.dataTask(with: request) { data, response, error in
            let (challenged, cancelled, head) = handle.finish()
            // Gathered by `URLSession` itself: checked once it has all arrived.
            if !cancelled, error == nil, (data?.count ?? 0) > limit {
                completion(.failure(Self.bodyTooLong(limit)))
                return
            }
            completion(
                Self.result(
                    data: data, response: response, error: error, challenged: challenged, cancelled: cancelled,
                    headReceived: head))
        }
        // The handle is the task's delegate too: one object (and one lock) per request instead of two.
        task.delegate = handle
        handle.start(task)
    }
}

// platforms: an OperationQueue that runs its operations inline is sound with swift-corelibs-foundation's delivery
// only
#if canImport(FoundationNetworking)
    /// The delegate queue of a session ``URLSessionTransport`` makes itself, on Linux: it runs each operation at
    /// once, on the thread that adds it, which is `URLSession`'s own queue.
    ///
    /// swift-corelibs-foundation adds a data task's completion handler to the delegate queue, so with its default
    /// queue every request wakes one more thread than `data(for:)`, which calls it inline. What runs here must
    /// not wait for `URLSession`'s queue (a task's `cancel()`, `resume()` or `suspend()` do): ``TaskHandle``
    /// and the streaming session cancel, and answer authentication challenges, from another thread.
    /// (`@unchecked` restates `OperationQueue`'s own conformance; the subclass adds no state.)
    final class InlineDelegateQueue: OperationQueue, @unchecked Sendable {
        override func addOperation(_ block: @escaping @Sendable () -> Void) { block() }
    }
#endif
