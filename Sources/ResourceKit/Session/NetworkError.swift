public import Foundation

/// The one error type ResourceKit throws.
///
/// Every public asynchronous API is declared `throws(NetworkError)`, so a `catch` clause always has a
/// `NetworkError` in hand and can switch over what went wrong.
public indirect enum NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A URL could not be built: a bad base URL, a path that does not form a URL, or a malformed `Link`.
    case invalidURL(String)
    /// The request could not be built from what the caller gave, for example an update of a resource
    /// that holds no value yet.
    case invalidRequest(String)
    /// The transport failed before a complete response arrived (connection refused, host not found,
    /// connection lost…), with the `URLError.Code` that says which.
    case transport(code: URLError.Code, message: String)
    /// The request did not complete within its time limit (the endpoint's ``Endpoint/timeLimit``, or the
    /// session's ``NetworkSession/timeLimit``), or a timeout of the transport itself.
    case timeout
    /// The calling task was cancelled. `CancellationError` and `URLError.cancelled` both become this.
    case cancelled
    /// The server answered with a status the validation provider does not accept. `headers` are the
    /// response's, so a caller can read `Retry-After` or `Location` (see ``headers`` and ``retryAfter``).
    case httpStatus(code: Int, body: Data, headers: HTTPHeaders = HTTPHeaders())
    /// A validation provider decoded the server's own error from the response.
    case server(ServerError)
    /// The response body could not be decoded into the expected type.
    case decoding(type: String, codingPath: String, message: String)
    /// The request body could not be encoded.
    case encoding(String)
    /// The server's answer was well formed but cannot be used, for example pagination whose next page
    /// leads back to a page already loaded (a cycle), which would page forever.
    case invalidResponse(String)
    /// The operation's answer was discarded because a newer operation replaced what it worked on: a
    /// ``ListResource`` next page still in flight when a refresh's first page arrived belongs to the old
    /// list, so its callers get this instead of the old list.
    case superseded
    /// The session's ``Authenticator`` failed to refresh a rejected credential, with the error its refresh
    /// threw. Every request that waited for that refresh fails with this same error.
    case authenticationFailed(NetworkError)

    /// A readable description of the error, suitable for logs.
    public var description: String {
        switch self {
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
        case .superseded:
            return "A newer operation replaced what this one worked on"
        case .authenticationFailed(let error):
            return "Authentication failed: \(error)"
        }
    }

    /// Whether two errors are the same error. Response headers are not compared: they differ from one
    /// response to the next (`Date`, request ids) while the error is the same; compare ``headers`` when
    /// they matter.
    public static func == (lhs: NetworkError, rhs: NetworkError) -> Bool {
        switch (lhs, rhs) {
        case (.invalidURL(let a), .invalidURL(let b)), (.invalidRequest(let a), .invalidRequest(let b)),
            (.encoding(let a), .encoding(let b)), (.invalidResponse(let a), .invalidResponse(let b)):
            return a == b
        case (.transport(let code, let message), .transport(let otherCode, let otherMessage)):
            return code == otherCode && message == otherMessage
        case (.timeout, .timeout), (.cancelled, .cancelled), (.superseded, .superseded):
            return true
        case (.httpStatus(let code, let body, _), .httpStatus(let otherCode, let otherBody, _)):
            return code == otherCode && body == otherBody
        case (.server(let a), .server(let b)):
            return a == b
        case (.decoding(let type, let path, let message), .decoding(let otherType, let otherPath, let otherMessage)):
            return type == otherType && path == otherPath && message == otherMessage
        case (.authenticationFailed(let a), .authenticationFailed(let b)):
            return a == b
        default:
            return false
        }
    }

    /// The headers of the response behind this error, if a response arrived.
    public var headers: HTTPHeaders? {
        switch self {
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
        switch self {
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

/// An error the server described in its response body, decoded by a validation provider.
///
/// PocketBase, for example, answers a failed validation with
/// `{"status":400,"message":"…","data":{"title":{"code":"validation_required","message":"…"}}}`;
/// ``PocketBaseValidation`` turns that into a `ServerError` whose ``fieldErrors`` hold the messages.
public struct ServerError: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status code.
    public var status: Int
    /// The server's message.
    public var message: String
    /// Messages per field, for validation errors.
    public var fieldErrors: [String: String]
    /// The raw response body.
    public var body: Data
    /// The response headers.
    public var headers: HTTPHeaders

    /// Creates a server error.
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - message: The server's message.
    ///   - fieldErrors: Messages per field.
    ///   - body: The raw response body.
    ///   - headers: The response headers.
    public init(
        status: Int,
        message: String,
        fieldErrors: [String: String] = [:],
        body: Data = Data(),
        headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.status = status
        self.message = message
        self.fieldErrors = fieldErrors
        self.body = body
        self.headers = headers
    }

    /// Whether two server errors are the same: status, message, field errors and body. Headers are not
    /// compared; they differ from one response to the next.
    public static func == (lhs: ServerError, rhs: ServerError) -> Bool {
        lhs.status == rhs.status && lhs.message == rhs.message && lhs.fieldErrors == rhs.fieldErrors
            && lhs.body == rhs.body
    }

    /// The message followed by the field messages, sorted by field name.
    public var description: String {
        let fields = fieldErrors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return fields.isEmpty
            ? "Server error \(status): \(message)"
            : "Server error \(status): \(message) (\(fields.joined(separator: "; ")))"
    }
}
