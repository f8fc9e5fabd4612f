public import Foundation

/// A complete HTTP response: status, headers and body.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code.
    public var statusCode: Int
    /// The response headers.
    public var headers: HTTPHeaders
    /// The body; empty for `204`, `205` and `HEAD`.
    public var body: Data
    /// The URL of the request this answers. ``NetworkSession`` fills it in with the URL it sent when the
    /// transport reports none, so relative `Link` headers always have a base.
    public var url: URL?
    /// The body still arriving, for a streamed request: `body` is then empty.
    var stream: ResponseBody?

    /// Creates a response.
    /// - Parameters:
    ///   - statusCode: The status code.
    ///   - headers: The headers.
    ///   - body: The body.
    ///   - url: The request URL.
    public init(statusCode: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), url: URL? = nil) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.url = url
    }
}

/// A type whose value stands for an empty response body.
///
/// `Optional` (as `nil`) and ``EmptyResponse`` conform, so a `204 No Content`, a `HEAD` response or a
/// `Content-Length: 0` body decodes to them instead of failing.
public protocol EmptyBodyRepresentable {
    /// The value an empty body decodes to.
    static var emptyBodyValue: Self { get }
}

extension Optional: EmptyBodyRepresentable {
    /// `nil`.
    public static var emptyBodyValue: Wrapped? { nil }
}

/// A response whose body does not matter: it decodes from an empty body and from any JSON.
public struct EmptyResponse: Decodable, Sendable, Equatable, EmptyBodyRepresentable {
    /// Creates an empty response.
    public init() {}
    /// Decodes from anything, ignoring the content.
    /// - Parameter decoder: The decoder.
    public init(from decoder: any Decoder) throws {}
    /// An empty response.
    public static var emptyBodyValue: EmptyResponse { EmptyResponse() }
}
