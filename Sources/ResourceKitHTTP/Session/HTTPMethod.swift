/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The method's name as sent on the wire, such as `GET`.
    public var rawValue: String

    /// Creates a method from its name; the name is upper-cased. A name that is not an RFC 9110 token (empty,
    /// or with a space, a line break or another separator) is refused when a request is built, with
    /// ``NetworkError/invalidRequest(_:)``.
    /// - Parameter rawValue: The method name.
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }

    /// Creates a method from a string literal.
    /// - Parameter value: The method name.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// The method's name.
    public var description: String { rawValue }

    /// `GET`
    public static let get: HTTPMethod = "GET"
    /// `POST`
    public static let post: HTTPMethod = "POST"
    /// `PUT`
    public static let put: HTTPMethod = "PUT"
    /// `PATCH`
    public static let patch: HTTPMethod = "PATCH"
    /// `DELETE`
    public static let delete: HTTPMethod = "DELETE"
    /// `HEAD`
    public static let head: HTTPMethod = "HEAD"
    /// `OPTIONS`
    public static let options: HTTPMethod = "OPTIONS"
}
