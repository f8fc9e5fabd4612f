import Foundation

/// Decides whether a response is a success, and what error a failure is.
///
/// It sees the status, the headers and the body, so it can accept codes other than 2xx, reject a 2xx
/// whose body says it failed (`{"ok": false}`), or decode the server's error body into the thrown
/// error so an app can show the server's own message.
public protocol ValidationProviding: Sendable {
    /// Validates a response.
    /// - Parameter response: The response.
    /// - Throws: The ``NetworkError`` that this response stands for.
    func validate(_ response: HTTPResponse) throws(NetworkError)
}

/// Accepts a range of status codes (`200..<300` by default) and throws ``NetworkError/httpStatus(code:body:headers:)``
/// for any other.
public struct StatusCodeValidation: ValidationProviding {
    /// The accepted status codes.
    public var acceptable: Set<Int>

    /// Creates a validation provider.
    /// - Parameter acceptable: The accepted status codes.
    public init(acceptable: some Sequence<Int> = 200..<300) {
        self.acceptable = Set(acceptable)
    }

    /// Throws for a status outside ``acceptable``.
    public func validate(_ response: HTTPResponse) throws(NetworkError) {
        guard acceptable.contains(response.statusCode) else {
            throw .httpStatus(code: response.statusCode, body: response.body, headers: response.headers)
        }
    }
}

/// A validation provider backed by a closure.
///
/// ```swift
/// let validation = ValidationClosure { try Envelope.check($0.body) }
/// ```
public struct ValidationClosure: ValidationProviding {
    private let body: @Sendable (HTTPResponse) throws -> Void

    /// Creates a provider.
    /// - Parameter validate: Throws the error a response stands for: a ``NetworkError`` as it is, any
    ///   other error mapped with ``NetworkError/init(_:)``. It stays synchronous, as validation is.
    public init(_ validate: @escaping @Sendable (HTTPResponse) throws -> Void) {
        self.body = validate
    }

    /// Calls the closure.
    /// - Throws: What the closure threw, mapped with ``NetworkError/init(_:)``.
    public func validate(_ response: HTTPResponse) throws(NetworkError) {
        do {
            try body(response)
        } catch {
            throw NetworkError(error)
        }
    }
}
