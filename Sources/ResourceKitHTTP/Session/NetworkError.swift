public import Foundation

/// The one error type ResourceKit throws.
///
/// Every public asynchronous API is declared `throws(NetworkError)`, so a `catch` clause always has a
/// `NetworkError` in hand. Switch over its ``code`` to decide what to do, and read the details that
/// code carries (``statusCode``, ``headers``, ``body``, ``serverError``, ``transportCode``, ``message``…):
///
/// ```swift
/// do {
///     try await post.read()
/// } catch {
///     switch error.code {
///     case .httpStatus where error.statusCode == 404: showGone()
///     case .transport, .timeout: showOffline()
///     case .cancelled: break
///     default: show(error.description)
///     }
/// }
/// ```
///
/// `NetworkError` is a struct, not an enum, so that a later release can add a kind of error or a detail
/// without breaking a `switch` in your code: a `switch` over ``code`` needs a `default`. Errors are made
/// with the static members named after their code (`.timeout`, `.httpStatus(code:body:headers:)`…) and
/// compare with `==`, so `#expect(throws: NetworkError.timeout)` and `catch .cancelled` read as before.
public struct NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The storage: one case per code, with what that code carries. Internal, so that it can grow.
    @usableFromInline indirect enum Kind: Sendable {
        case invalidURL(String)
        case invalidRequest(String)
        case transport(code: URLError.Code, message: String)
        case timeout
        case cancelled
        case httpStatus(code: Int, body: Data, headers: HTTPHeaders)
        case server(ServerError)
        case decoding(type: String, codingPath: String, message: String)
        case encoding(String)
        case invalidResponse(String)
        case authenticationFailed(NetworkError)
        case file(String)
        /// A code a module added (``Code/init(_:)``), with its detail.
        case added(Code, detail: String)
    }

    @usableFromInline let kind: Kind

    @inlinable init(kind: Kind) { self.kind = kind }

    /// A URL could not be built: a bad base URL, a path that does not form a URL, or a malformed `Link`.
    /// - Parameter detail: What was wrong.
    public static func invalidURL(_ detail: String) -> NetworkError { NetworkError(kind: .invalidURL(detail)) }

    /// The request could not be built from what the caller gave, for example an update of a resource that
    /// holds no value yet.
    /// - Parameter detail: What was wrong.
    public static func invalidRequest(_ detail: String) -> NetworkError {
        NetworkError(kind: .invalidRequest(detail))
    }

    /// The transport failed before a complete response arrived (connection refused, host not found,
    /// connection lost…), with the `URLError.Code` that says which.
    /// - Parameters:
    ///   - code: The `URLError.Code` of the failure.
    ///   - message: A readable description.
    public static func transport(code: URLError.Code, message: String) -> NetworkError {
        NetworkError(kind: .transport(code: code, message: message))
    }

    /// The request did not complete within its time limit (the endpoint's ``Endpoint/timeLimit``, or the
    /// session's ``NetworkSession/Configuration/timeLimit``), or a timeout of the transport itself.
    @inlinable public static var timeout: NetworkError { NetworkError(kind: .timeout) }

    /// The calling task was cancelled. `CancellationError` and `URLError.cancelled` both become this.
    @inlinable public static var cancelled: NetworkError { NetworkError(kind: .cancelled) }

    /// The server answered with a status the validation provider does not accept. `headers` are the
    /// response's, so a caller can read `Retry-After` or `Location` (see ``headers`` and ``retryAfter``).
    /// - Parameters:
    ///   - code: The HTTP status code.
    ///   - body: The response body.
    ///   - headers: The response headers.
    public static func httpStatus(code: Int, body: Data, headers: HTTPHeaders = HTTPHeaders()) -> NetworkError {
        NetworkError(kind: .httpStatus(code: code, body: body, headers: headers))
    }

    /// A validation provider decoded the server's own error from the response.
    /// - Parameter error: The server's error.
    public static func server(_ error: ServerError) -> NetworkError { NetworkError(kind: .server(error)) }

    /// The response body could not be decoded into the expected type.
    /// - Parameters:
    ///   - type: The type that was being decoded.
    ///   - codingPath: Where decoding failed, as in `items[3].title`; empty at the top level.
    ///   - message: What the decoder said.
    public static func decoding(type: String, codingPath: String, message: String) -> NetworkError {
        NetworkError(kind: .decoding(type: type, codingPath: codingPath, message: message))
    }

    /// The request body could not be encoded.
    /// - Parameter message: What the encoder said.
    public static func encoding(_ message: String) -> NetworkError { NetworkError(kind: .encoding(message)) }

    /// The server's answer was well formed but cannot be used, for example pagination whose next page
    /// leads back to a page already loaded (a cycle), which would page forever.
    /// - Parameter detail: What was wrong.
    public static func invalidResponse(_ detail: String) -> NetworkError {
        NetworkError(kind: .invalidResponse(detail))
    }

    /// The session's ``Authenticator`` failed to refresh a rejected credential, with the error its refresh
    /// threw. Every request that waited for that refresh fails with this same error.
    /// - Parameter error: The refresh's error.
    public static func authenticationFailed(_ error: NetworkError) -> NetworkError {
        NetworkError(kind: .authenticationFailed(error))
    }

    /// A file of a transfer could not be read or written: a download's destination is not in an existing
    /// directory, the disk is full, an upload's file is missing or unreadable.
    /// - Parameter detail: Which file, and what went wrong.
    public static func file(_ detail: String) -> NetworkError { NetworkError(kind: .file(detail)) }

    /// An error of a code that a module or an app added to ``Code``, with its detail.
    ///
    /// ```swift
    /// extension NetworkError.Code {
    ///     static let quotaExceeded = NetworkError.Code("quotaExceeded")
    /// }
    /// throw NetworkError(.quotaExceeded, detail: "10 of 10 uploads this hour")
    /// ```
    /// - Parameters:
    ///   - code: The code; one of the library's own (``Code/timeout``…) is kept as an added code of that
    ///     name, with none of that code's details.
    ///   - detail: What happened: the error's ``message``.
    public init(_ code: Code, detail: String) { self.init(kind: .added(code, detail: detail)) }

    /// The detail of the error without its code's prefix: the invalid URL's or request's detail, the
    /// transport's or coder's message, the server's message; empty when the code says it all.
    public var message: String {
        switch kind {
        case .invalidURL(let detail), .invalidRequest(let detail), .encoding(let detail),
            .invalidResponse(let detail), .file(let detail), .added(_, let detail):
            detail
        case .transport(_, let message), .decoding(_, _, let message): message
        case .server(let error): error.message
        case .httpStatus(_, let body, _): String(decoding: body.prefix(200), as: UTF8.self)
        case .authenticationFailed(let error): error.description
        case .timeout, .cancelled: ""
        }
    }

    /// Whether the error says the server could not be reached at all: a ``Code/timeout``, or a
    /// ``Code/transport`` error of no connection, a host that cannot be found or connected to, a lost
    /// connection or a timed-out request: what a retry or an offline queue waits out.
    public var isUnreachable: Bool {
        switch kind {
        case .timeout: return true
        case .transport(let code, _):
            return [
                .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
                .networkConnectionLost, .timedOut, .internationalRoamingOff, .dataNotAllowed,
            ].contains(code)
        default: return false
        }
    }

    /// The `URLError.Code` of a ``Code/transport`` error.
    public var transportCode: URLError.Code? {
        if case .transport(let code, _) = kind { return code }
        return nil
    }

    /// The response body of an ``Code/httpStatus`` or ``Code/server`` error.
    public var body: Data? {
        switch kind {
        case .httpStatus(_, let body, _): body
        case .server(let error): error.body
        default: nil
        }
    }

    /// The server's own error, decoded by a validation provider (``Code/server``).
    public var serverError: ServerError? {
        if case .server(let error) = kind { return error }
        return nil
    }

    /// The type being decoded and where decoding failed (as in `items[3].title`), for a ``Code/decoding``
    /// error.
    public var decodingFailure: (type: String, codingPath: String)? {
        if case .decoding(let type, let codingPath, _) = kind { return (type, codingPath) }
        return nil
    }

    /// The error behind this one: the refresh's error of an ``Code/authenticationFailed`` error.
    public var underlyingError: NetworkError? {
        if case .authenticationFailed(let error) = kind { return error }
        return nil
    }

    /// A readable description of the error, suitable for logs: one line, whatever the server's body or
    /// message holds (each line break becomes a space).
    public var description: String { lines.singleLine }

    private var lines: String {
        switch kind {
        case .invalidURL(let detail):
            return "Invalid URL: \(detail)"
        case .invalidRequest(let detail):
            return "Invalid request: \(detail)"
        case .transport(let code, let message):
            return "Transport error \(code.rawValue): \(message)"
        case .timeout:
            return "The request timed out"
        case .cancelled:
            return "The request was cancelled"
        case .httpStatus(let code, let body, _):
            let text = String(decoding: body.prefix(200), as: UTF8.self)
            return text.isEmpty ? "HTTP status \(code)" : "HTTP status \(code): \(text)"
        case .server(let error):
            return error.description
        case .decoding(let type, let codingPath, let message):
            let location = codingPath.isEmpty ? "the top level" : "'\(codingPath)'"
            return "Could not decode \(type) at \(location): \(message)"
        case .encoding(let message):
            return "Could not encode the request body: \(message)"
        case .invalidResponse(let detail):
            return "Invalid response: \(detail)"
        case .authenticationFailed(let error):
            return "Authentication failed: \(error)"
        case .file(let detail):
            return "File error: \(detail)"
        case .added(let code, let detail):
            return detail.isEmpty ? code.name : "\(code.name): \(detail)"
        }
    }

    /// Whether two errors are the same error. Response headers are not compared: they differ from one
    /// response to the next (`Date`, request ids) while the error is the same; compare ``headers`` when
    /// they matter.
    public static func == (lhs: NetworkError, rhs: NetworkError) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.invalidURL(let a), .invalidURL(let b)), (.invalidRequest(let a), .invalidRequest(let b)),
            (.encoding(let a), .encoding(let b)), (.invalidResponse(let a), .invalidResponse(let b)),
            (.file(let a), .file(let b)):
            return a == b
        case (.transport(let code, let message), .transport(let otherCode, let otherMessage)):
            return code == otherCode && message == otherMessage
        case (.timeout, .timeout), (.cancelled, .cancelled):
            return true
        case (.httpStatus(let code, let body, _), .httpStatus(let otherCode, let otherBody, _)):
            return code == otherCode && body == otherBody
        case (.server(let a), .server(let b)):
            return a == b
        case (.decoding(let type, let path, let message), .decoding(let otherType, let otherPath, let otherMessage)):
            return type == otherType && path == otherPath && message == otherMessage
        case (.authenticationFailed(let a), .authenticationFailed(let b)):
            return a == b
        case (.added(let code, let detail), .added(let otherCode, let otherDetail)):
            return code == otherCode && detail == otherDetail
        default:
            return false
        }
    }

    /// The headers of the response behind this error, if a response arrived.
    public var headers: HTTPHeaders? {
        switch kind {
        case .httpStatus(_, _, let headers): return headers
        case .server(let error): return error.headers
        default: return nil
        }
    }

    /// How long the server asked the client to wait before trying again: the response's `Retry-After`
    /// header, in seconds or as an HTTP date, measured from now.
    public var retryAfter: Duration? {
        headers.flatMap { RetryAfter.delay(in: $0) }
    }

    /// The HTTP status code of the response behind this error, if a response arrived.
    public var statusCode: Int? {
        switch kind {
        case .httpStatus(let code, _, _): return code
        case .server(let error): return error.status
        default: return nil
        }
    }

    /// Maps any error to a `NetworkError`.
    ///
    /// `NetworkError` passes through unchanged; `CancellationError` and `URLError.cancelled` become
    /// ``cancelled``; `URLError.timedOut` becomes ``timeout``; other `URLError`s become
    /// ``transport(code:message:)`` with their code and `localizedDescription`; `EncodingError` and
    /// `DecodingError` keep their details (as ``encoding(_:)`` and ``decoding(type:codingPath:message:)``
    /// of a `value`). Any other error becomes ``transport(code:message:)`` with `URLError.Code.unknown` and the
    /// error's `String(describing:)` as its message.
    ///
    /// Custom transports use this to report their failures, and every closure the API takes (an
    /// authenticator's refresh, an adapter, a stub's responder…) may throw any error: the library maps it
    /// with this initializer.
    /// - Parameter error: The error to map.
    public init(_ error: any Error) {
        switch error {
        case let error as NetworkError:
            self = error
        case is CancellationError:
            self = .cancelled
        case let error as URLError:
            switch error.code {
            case .cancelled: self = .cancelled
            case .timedOut: self = .timeout
            default: self = .transport(code: error.code, message: error.localizedDescription)
            }
        case let error as DecodingError:
            self = NetworkError(decoding: error, type: "value")
        case let error as EncodingError:
            self = .encoding(String(describing: error))
        default:
            self = .transport(code: .unknown, message: String(describing: error))
        }
    }

    init(decoding error: DecodingError, type: String) {
        switch error {
        case .typeMismatch(let expected, let context):
            self = .decoding(
                type: type, codingPath: Self.path(context.codingPath),
                message: "expected \(expected): \(context.debugDescription)")
        case .valueNotFound(let expected, let context):
            self = .decoding(
                type: type, codingPath: Self.path(context.codingPath),
                message: "missing \(expected) value: \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            self = .decoding(
                type: type, codingPath: Self.path(context.codingPath + [key]),
                message: "key not found: \(context.debugDescription)")
        case .dataCorrupted(let context):
            self = .decoding(
                type: type, codingPath: Self.path(context.codingPath), message: context.debugDescription)
        @unknown default:
            self = .decoding(type: type, codingPath: "", message: String(describing: error))
        }
    }

    /// Renders a coding path as `items[3].title`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var result = ""
        for key in codingPath {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return result
    }
}
