#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// What a task's end means: the response, or the `NetworkError` of its error, told apart by codes, states and
/// byte counts, never by the platform's words.
extension URLSessionTransport {
    static func bodyTooLong(_ limit: Int) -> NetworkError {
        .invalidResponse(
            "the response body is longer than \(limit) bytes (URLSessionTransport.maximumResponseBodySize): "
                + "read it with bytes(_:) or download(_:to:)")
    }

    /// - Parameters:
    ///   - headReceived: The response whose head arrived before the error, when the task tells it (a completion
    ///     handler gets no response with an error): a body cut short is told apart from a failed connection by it.
    ///   - received: How many body bytes arrived before the error, when they were counted.
    static func result(
        data: Data?,
        response: URLResponse?,
        error: (any Error)?,
        challenged: HTTPURLResponse?,
        cancelled: Bool,
        headReceived: URLResponse? = nil,
        received: Int? = nil
    ) -> Result<HTTPResponse, NetworkError> {
        // A rejected challenge ends the task as "cancelled"; unless the caller cancelled, the answer is the
        // challenge's own response.
        if let error, let challenged, !cancelled, NetworkError(error) == .cancelled {
            return .success(Self.response(challenged, body: Data()))
        }
        if let error {
            // platforms: libcurl's "Empty reply from server" is the only use of badServerResponse in
            // swift-corelibs-foundation; on Apple platforms the code means a malformed response
            #if canImport(FoundationNetworking)
                // swift-corelibs-foundation reports a connection closed before any response byte (libcurl's
                // "Empty reply from server", its only use of this code) as `badServerResponse`; Darwin, and Linux
                // for a reset connection, as `networkConnectionLost`. One error on every platform, which a retry
                // policy retries for idempotent requests only.
                if response == nil, (error as? URLError)?.code == .badServerResponse {
                    return .failure(.transport(code: .networkConnectionLost, message: closedBeforeAnsweringMessage))
                }
            #endif
            return .failure(
                cutShort(error, head: headReceived ?? response, received: received ?? data?.count)
                    ?? NetworkError(error))
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(.transport(code: .badServerResponse, message: "the response is not an HTTP response"))
        }
        return .success(Self.response(http, body: data ?? Data()))
    }

    /// The error of a body that ended before its end: its head arrived, then the connection failed before the
    /// length the head announced (`Content-Length`, when the body is not re-encoded), or, without one (a chunked
    /// body), before the body ended. The response is invalid, not the transport: it is not retried as a failed
    /// connection. Decided by the head and the bytes, never by the error's text, which is libcurl's on Linux
    /// ("transfer closed with…", code `unknown` or `networkConnectionLost`) and CFNetwork's on Apple platforms
    /// (`networkConnectionLost`). A cancelled or timed-out transfer is not cut short: it stopped.
    /// - Parameters:
    ///   - head: The response whose head arrived, if one did.
    ///   - received: How many body bytes arrived, when they were counted.
    static func cutShort(_ error: any Error, head: URLResponse?, received: Int?) -> NetworkError? {
        guard let error = error as? URLError, error.code != .cancelled, error.code != .timedOut,
            let head = head as? HTTPURLResponse
        else { return nil }
        let headers = Self.response(head, body: Data()).headers
        // A compressed body arrives decoded: its length is not the one announced.
        let isIdentity = headers["Content-Encoding"].map { $0.lowercased() == "identity" } ?? true
        if isIdentity, let announced = headers["Content-Length"].flatMap(Int64.init), let received {
            guard Int64(received) < announced else { return nil }
        } else {
            // No length to compare: a connection that fails once the body started is a body cut short.
            guard Self.connectionFailures.contains(error.code) else { return nil }
        }
        return .invalidResponse("\(truncatedBodyMessage) (\(NetworkError(error).message))")
    }

    /// The codes a connection that failed mid-body ends a task with: CFNetwork's, and libcurl's through
    /// swift-corelibs-foundation (a partial transfer is `unknown` there, a reset `networkConnectionLost`).
    private static let connectionFailures: Set<URLError.Code> = [
        .networkConnectionLost, .unknown, .cannotParseResponse, .badServerResponse,
    ]

    /// How the error of a body cut short starts: a stream of events reads it as a lost connection.
    package static let truncatedBodyMessage = "the body ended before its announced end"

    static func response(_ http: HTTPURLResponse, body: Data) -> HTTPResponse {
        var headers = HTTPHeaders()
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return HTTPResponse(statusCode: http.statusCode, headers: headers, body: body, url: http.url)
    }
}
