#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// Holds a data task so a cancellation that arrives before or after it starts reaches it, and, as the task's
/// delegate, returns redirects and authentication challenges to the transport instead of acting on them.
///
/// On a session the transport makes on Linux, the handle also receives the task's response and body through
/// ``TaskRouter`` (the task has no completion handler) and holds the body itself, so that a body past
/// ``URLSessionTransport/maximumResponseBodySize`` is cancelled as it arrives instead of growing without bound.
final class TaskHandle: NSObject, URLSessionTaskDelegate, StoppableRequest, RoutedTask {
    private struct State {
        var task: URLSessionDataTask?
        var isCancelled = false
        var challenged: HTTPURLResponse?
        /// Routed tasks only: the response, the body so far, and whether it passed the bound.
        var response: URLResponse?
        var body = Data()
        var isOverLimit = false
        var completion: (@Sendable (Result<HTTPResponse, NetworkError>) -> Void)?
        /// The library's stream of the request's streamed body, from which a restart makes a fresh one.
        var uploadBody: BodyInputStream?
        /// The result, kept for the caller that `send` resumes.
        var result: Result<HTTPResponse, NetworkError>?
    }
    private let state = Locked(State())
    /// The most body bytes a routed task holds.
    let maximumBodySize: Int

    init(maximumBodySize: Int) {
        self.maximumBodySize = max(1, maximumBodySize)
    }

    func start(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.isCancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    /// The task has completed: returns the challenge response it got, if any, and whether the request was
    /// cancelled, and lets go of the task, which holds this handle as its delegate.
    func finish() -> (challenged: HTTPURLResponse?, cancelled: Bool, head: URLResponse?) {
        let (challenged, cancelled, task) = state.withLock { state in
            defer { state.task = nil }
            return (state.challenged, state.isCancelled, state.task)
        }
        // The head, if it arrived: a completion handler gets none with an error, and a body cut short is told
        // by it.
        return (challenged, cancelled, task?.response)
    }

    /// Cancels the task on ``URLSessionTransport/waitingCalls``, never waiting for it here: `cancel()` waits for
    /// `URLSession`'s queue, which may be resuming this request's caller, and a cancellation handler runs under
    /// the cancelled task's lock, which that resumption takes (the deadlock of swift-corelibs-foundation #5412);
    /// a ``URLSessionTransport/session`` the transport made runs completions on that queue.
    func cancel() {
        let task = state.withLock { state in
            state.isCancelled = true
            return state.task
        }
        guard let task else { return }
        URLSessionTransport.waitingCalls.async { task.cancel() }
    }

    func stop() { cancel() }

    /// Keeps the result for ``takeResult()``.
    func keep(_ result: Result<HTTPResponse, NetworkError>) { state.withLock { $0.result = result } }

    /// The result ``keep(_:)`` kept.
    func takeResult() -> Result<HTTPResponse, NetworkError> {
        state.withLock { $0.result.take() } ?? .failure(.invalidResponse("the request ended without a result"))
    }

    /// The library's stream of the request's streamed body, if it has one; set before the task starts.
    var uploadBody: BodyInputStream? {
        get { state.withLock { $0.uploadBody } }
        set { state.withLock { $0.uploadBody = newValue } }
    }

    // MARK: Routed tasks

    /// Where a routed task's result goes, once.
    func onCompletion(_ completion: @escaping @Sendable (Result<HTTPResponse, NetworkError>) -> Void) {
        state.withLock { $0.completion = completion }
    }

    func received(_ response: URLResponse) { state.withLock { $0.response = response } }

    func challenged(by response: HTTPURLResponse) { state.withLock { $0.challenged = response } }

    /// Adds a chunk of the body; past the bound, drops the body and cancels the task.
    func received(_ data: Data) {
        let task = state.withLock { state -> URLSessionDataTask? in
            guard !state.isOverLimit else { return nil }
            guard data.count <= maximumBodySize - state.body.count else {
                state.isOverLimit = true
                state.body = Data()
                return state.task
            }
            state.body.append(data)
            return nil
        }
        guard let task else { return }
        URLSessionTransport.waitingCalls.async { task.cancel() }
    }

    /// The routed task ended: its caller gets the response with the body gathered, or the error.
    func completed(with error: (any Error)?) {
        let (completion, response, body, challenged, cancelled, isOverLimit) = state.withLock { state in
            defer {
                state.task = nil
                state.completion = nil
                state.body = Data()
            }
            return (
                state.completion, state.response, state.body, state.challenged, state.isCancelled, state.isOverLimit
            )
        }
        guard let completion else { return }
        if isOverLimit, !cancelled {
            completion(.failure(URLSessionTransport.bodyTooLong(maximumBodySize)))
            return
        }
        completion(
            URLSessionTransport.result(
                data: body, response: response, error: error, challenged: challenged, cancelled: cancelled,
                received: body.count))
    }

    // MARK: Task delegate

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        URLSessionTransport.answer(challenge, completionHandler) { self.challenged(by: $0) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        URLSessionTransport.restartBody(uploadBody, stop: { [weak self] in self?.cancel() }, completionHandler)
    }
}

/// What a task run by a ``TaskRouter`` does with its events: a ``TaskHandle`` of a transport's own session, or a
/// ``StreamedTask``.
protocol RoutedTask: AnyObject, Sendable {
    func received(_ response: URLResponse)
    func received(_ data: Data)
    func completed(with error: (any Error)?)
    /// An authentication challenge came with this response: the task's answer, once it ends.
    func challenged(by response: HTTPURLResponse)
    /// The library's stream of the request's streamed body, if it has one.
    var uploadBody: BodyInputStream? { get }
    /// Stops the task: its body failed.
    func stop()
}

/// The delegate of a session that a transport makes: it hands each task's events to the task's ``RoutedTask``.
/// `URLSession` on Linux shows a body as it arrives only to a delegate, and never the body of a task with a
/// completion handler (its swift-corelibs-foundation gathers that one in memory until the end), so the tasks of
/// these sessions have no completion handler, and their events come here, on the session's delegate queue.
/// Redirects come back as their responses; an authentication challenge is answered with its own response.
final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let tasks = Locked<[Int: any RoutedTask]>([:])

    func register(_ task: any RoutedTask, for identifier: Int) { tasks.withLock { $0[identifier] = task } }

    private func task(_ identifier: Int) -> (any RoutedTask)? { tasks.withLock { $0[identifier] } }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        task(dataTask.taskIdentifier)?.received(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        task(dataTask.taskIdentifier)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let routed = tasks.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        routed?.completed(with: error)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let routed = self.task(task.taskIdentifier)
        URLSessionTransport.answer(challenge, completionHandler) { routed?.challenged(by: $0) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        let routed = self.task(task.taskIdentifier)
        URLSessionTransport.restartBody(routed?.uploadBody, stop: { routed?.stop() }, completionHandler)
    }
}
