public import Foundation

/// An error the server described in its response body, decoded by a validation provider.
///
/// PocketBase, for example, answers a failed validation with
/// `{"status":400,"message":"…","data":{"title":{"code":"validation_required","message":"…"}}}`;
/// `PocketBaseValidation` (in `ResourceKitPocketBase`) turns that into a `ServerError` whose ``fieldErrors`` hold the messages.
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

    /// The message followed by the field messages, sorted by field name, on one line.
    public var description: String {
        let fields = fieldErrors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return
            (fields.isEmpty
            ? "Server error \(status): \(message)"
            : "Server error \(status): \(message) (\(fields.joined(separator: "; ")))").singleLine
    }
}
