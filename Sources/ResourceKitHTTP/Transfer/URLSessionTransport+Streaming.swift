#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension URLSessionTransport {
    /// Runs a data task whose body arrives as it comes, on a session of this transport's configuration with
    /// a delegate. Redirects and authentication challenges come back as their responses, as with
    /// ``send(_:)``.
    ///
    /// `URLSession` on Linux cannot pause a response: past 1 MB unread, what arrives waits in an unlinked
    /// temporary file, read back in order. On Linux the chunks reach that buffer or file on `URLSession`'s own
    /// queue, as they are read from the socket, so the transfer goes no faster than they are put away and
    /// nothing queues in memory between the socket and the body.
    public func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        if let unusable { throw .invalidRequest(unusable) }
        var request = request
        let timeout = Self.inactivityTimeout(request.timeoutInterval)
        if timeout != request.timeoutInterval { request.timeoutInterval = timeout }
        return try await streaming.start(request)
    }
}

/// The `URLSession` of a transport's streamed requests and its delegate, which routes each task's events to
/// the task's own ``StreamedTask``.
final class StreamingSession: Sendable {
    /// The configuration until the session is made on first use, then the session. Behind the lock, not a stored
    /// property: `URLSessionConfiguration` is `Sendable` in swift-corelibs-foundation but not in every Apple SDK.
    private enum Lazy {
        case configuration(URLSessionConfiguration)
        case session(URLSession)
    }

    private let router = TaskRouter()
    private let lazy: Locked<Lazy>

    init(configuration: URLSessionConfiguration) {
        // A copy: the transport's session keeps its own.
        let copy = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        #if canImport(FoundationNetworking)  // platforms: swift-corelibs-foundation's crash (see `init(session:)`)
            // See `URLSessionTransport.init(session:)`: a cache can crash a request cancelled as it completes.
            copy.urlCache = nil
        #endif
        lazy = Locked(.configuration(copy))
    }

    deinit {
        lazy.withLock { lazy in
            if case .session(let session) = lazy { session.finishTasksAndInvalidate() }
        }
    }

    private var urlSession: URLSession {
        lazy.withLock { lazy in
            switch lazy {
            case .session(let session): return session
            case .configuration(let configuration):
                let made = URLSession(
                    configuration: configuration, delegate: router, delegateQueue: Self.delegateQueue())
                lazy = .session(made)
                return made
            }
        }
    }

    /// The queue the delegate runs on. On Linux, `URLSession`'s own (``InlineDelegateQueue``):
    /// a chunk is put away before the next is read from the socket. An operation queue would take chunks as fast
    /// as the socket gives them and hold them in memory while its thread waits to be scheduled: a server could
    /// fill memory faster than any reader empties it. Nothing the delegate runs waits for `URLSession`'s queue:
    /// cancels and challenge answers go to other queues.
    private static func delegateQueue() -> OperationQueue {
        // platforms: swift-corelibs-foundation gathers nothing on its own queue, and its delegate queue's
        // `addOperation` is where each chunk is handed over; CFNetwork calls delegates its own way.
        #if canImport(FoundationNetworking)
            InlineDelegateQueue()
        #else
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            return queue
        #endif
    }

    /// Starts the request; returns when its head arrived.
    func start(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        // Set once the task is made: a streamed body that fails stops it.
        let stopping = Locked<StreamedTask?>(nil)
        let (prepared, body) = URLSessionTransport.prepared(request) { stopping.withLock { $0 }?.stop() }
        let task = urlSession.dataTask(with: prepared)
        let streamed = StreamedTask(task, uploadBody: body)
        stopping.withLock { $0 = streamed }
        router.register(streamed, for: task.taskIdentifier)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                streamed.awaitHead(continuation)
                task.resume()
            }
        } onCancel: {
            streamed.stop()
        }
        return try streamed.takeHead().get()
    }
}

/// One streamed request: its head, then its body.
final class StreamedTask: RoutedTask {
    private struct State {
        var head: CheckedContinuation<Void, Never>?
        /// What the caller gets once `head` is resumed. Handed over under the lock, not as the continuation's
        /// value: resumed from `URLSession`'s queue, a continuation orders the two threads by an atomic of the
        /// runtime that ThreadSanitizer cannot see (swiftlang/swift#57803), and it would report the caller's reads
        /// of what this thread made.
        var headResult: Result<StreamedResponse, NetworkError>?
        var writer: ResponseBody.Writer?
        var challenged: HTTPURLResponse?
        /// The reader or the caller stopped the task.
        var isStopped = false
        /// The head, once it came, and how much of the body has come.
        var response: HTTPURLResponse?
        var received = 0
    }

    private let task: URLSessionDataTask
    private let state = Locked(State())
    /// The library's stream of the request's streamed body, if it has one.
    private let body: Locked<BodyInputStream?>

    init(_ task: URLSessionDataTask, uploadBody: BodyInputStream? = nil) {
        self.task = task
        self.body = Locked(uploadBody)
    }

    var uploadBody: BodyInputStream? { body.withLock { $0 } }

    func awaitHead(_ continuation: CheckedContinuation<Void, Never>) {
        state.withLock { $0.head = continuation }
    }

    /// The head the caller was resumed for.
    func takeHead() -> Result<StreamedResponse, NetworkError> {
        state.withLock { $0.headResult.take() } ?? .failure(.invalidResponse("the response ended without a head"))
    }

    /// Hands the caller waiting for the head `result`, once.
    private func deliverHead(_ result: Result<StreamedResponse, NetworkError>) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.head.take() else { return nil }
            state.headResult = result
            return waiter
        }
        waiter?.resume()
    }

    /// Cancels the task for the reader or the caller, once, from another thread: this may run on `URLSession`'s
    /// queue, which `cancel()` waits for.
    func stop() {
        let first = state.withLock { state in
            defer { state.isStopped = true }
            return !state.isStopped
        }
        guard first else { return }
        let task = self.task
        // A queue of its own, not the transport's shared one: `cancel()` waits for `URLSession`'s queue, which a
        // socket that never runs dry can hold for a long time, and other requests' cancels must not wait behind it.
        DispatchQueue(label: "ResourceKit.StreamedTask.stop").async { task.cancel() }
    }

    func challenged(by response: HTTPURLResponse) { state.withLock { $0.challenged = response } }

    /// The head arrived: the caller gets it, with a body its chunks go to.
    func received(_ response: URLResponse) {
        guard let http = response as? HTTPURLResponse else {
            finish(.transport(code: .badServerResponse, message: "the response is not an HTTP response"))
            stop()
            return
        }
        // URLSession cannot wait for the reader: what it outruns it by spills to disk.
        let (body, writer) = ResponseBody.makeSpillingStream()
        writer.onTermination { [weak self] in self?.stop() }
        let response = URLSessionTransport.response(http, body: Data())
        state.withLock { state in
            state.writer = writer
            state.response = http
        }
        deliverHead(
            .success(
                StreamedResponse(
                    statusCode: response.statusCode, headers: response.headers, url: response.url, body: body)))
    }

    func received(_ data: Data) {
        guard
            let writer = state.withLock({ state -> ResponseBody.Writer? in
                state.received += data.count
                return state.writer
            })
        else { return }
        if !writer.yield(data) { stop() }
    }

    /// The task ended: before its head, the caller gets the error (or the challenge's response); after it,
    /// the body ends.
    func completed(with error: (any Error)?) {
        let (waiting, writer, challenged, isStopped, head, received) = state.withLock { state in
            (
                state.head != nil, state.writer.take(), state.challenged, state.isStopped, state.response,
                state.received
            )
        }
        if waiting {
            deliverHead(
                URLSessionTransport.result(
                    data: nil, response: nil, error: error ?? URLError(.badServerResponse), challenged: challenged,
                    cancelled: false
                ).map { response in
                    StreamedResponse(
                        statusCode: response.statusCode, headers: response.headers, url: response.url,
                        body: ResponseBody(Data()))
                })
        }
        // A rejected challenge ends the task as cancelled, after its response's head and body: that body is
        // complete. A body cut short by the connection is told by its head and its bytes.
        let failure = error.map { error in
            (isStopped ? nil : URLSessionTransport.cutShort(error, head: head, received: received))
                ?? NetworkError(error)
        }
        writer?.finish(throwing: challenged != nil && !isStopped && failure == .cancelled ? nil : failure)
    }

    private func finish(_ error: NetworkError) { deliverHead(.failure(error)) }
}
