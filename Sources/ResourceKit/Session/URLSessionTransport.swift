public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The default transport: `URLSession` data tasks.
///
/// Cancelling the calling task cancels the `URLSessionTask`. On Linux, `URLSession` timeouts are whole
/// seconds (rounded down) and measure inactivity, and time a request waits for a free connection counts
/// toward it: size `URLSessionConfiguration.httpMaximumConnectionsPerHost` together with the timeouts
/// when you send many requests at once.
public struct URLSessionTransport: HTTPTransport {
    /// The session that runs the data tasks.
    public let session: URLSession

    /// Creates a transport on an existing session.
    ///
    /// On Linux, give the session a configuration with no URL cache (`urlCache = nil`):
    /// swift-corelibs-foundation crashes the process ("Trying to access a behaviour for a task that in not in
    /// the registry") when a request is cancelled just as a response it would cache completes. The other
    /// initializers take care of it.
    /// - Parameter session: The session to use.
    public init(session: URLSession) {
        self.session = session
    }

    /// Creates a transport with its own session.
    /// - Parameters:
    ///   - timeout: The request timeout, in seconds (whole seconds on Linux).
    ///   - maximumConnectionsPerHost: How many connections to one host may be open at once.
    public init(timeout: TimeInterval = 60, maximumConnectionsPerHost: Int = 16) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        self.init(session: URLSession(configuration: configuration))
    }

    /// Creates a transport with a session built from `configuration`.
    ///
    /// On Linux the session gets no URL cache, whatever `configuration` says: swift-corelibs-foundation
    /// crashes the process when a request is cancelled just as a response it would cache completes.
    /// `configuration` itself is not changed.
    /// - Parameter configuration: The configuration.
    public init(configuration: URLSessionConfiguration) {
        #if canImport(FoundationNetworking)
            let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
            configuration.urlCache = nil
        #endif
        self.init(session: URLSession(configuration: configuration))
    }

    /// Runs a data task for the request.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let handle = TaskHandle()
        let result: Result<HTTPResponse, NetworkError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    continuation.resume(returning: Self.result(data: data, response: response, error: error))
                }
                handle.start(task)
            }
        } onCancel: {
            handle.cancel()
        }
        return try result.get()
    }

    private static func result(data: Data?, response: URLResponse?, error: (any Error)?) -> Result<
        HTTPResponse, NetworkError
    > {
        if let error { return .failure(NetworkError(error)) }
        guard let http = response as? HTTPURLResponse else {
            return .failure(.transport(code: .badServerResponse, message: "the response is not an HTTP response"))
        }
        var headers = HTTPHeaders()
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return .success(
            HTTPResponse(statusCode: http.statusCode, headers: headers, body: data ?? Data(), url: http.url))
    }
}

/// Holds a data task so a cancellation that arrives before or after it starts reaches it.
private final class TaskHandle: Sendable {
    private struct State {
        var task: URLSessionDataTask?
        var isCancelled = false
    }
    private let state = Locked(State())

    func start(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.isCancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    func cancel() {
        let task = state.withLock { state in
            state.isCancelled = true
            return state.task
        }
        task?.cancel()
    }
}
