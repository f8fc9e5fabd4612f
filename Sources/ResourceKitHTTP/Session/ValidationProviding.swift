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
    ///
    /// Only HTTP's three-digit codes (`100...999`) count: a range is cut to them, so a range from a code up
    /// (`200...`) or to `Int.max` accepts every code from its start. Another sequence is read up to its first
    /// 100,000 elements, so that an endless one cannot hang the call.
    /// - Parameter acceptable: The accepted status codes.
    public init(acceptable: some Sequence<Int> = 200..<300) {
        let codes = 100...999
        if let range = acceptable as? Range<Int> {
            self.acceptable = range.isEmpty ? [] : Set(codes.clamped(to: range.lowerBound...(range.upperBound - 1)))
        } else if let range = acceptable as? ClosedRange<Int> {
            self.acceptable = Set(codes.clamped(to: range))
        } else if let range = acceptable as? PartialRangeFrom<Int> {
            self.acceptable = range.lowerBound > codes.upperBound ? [] : Set(max(range.lowerBound, 100)...999)
        } else {
            self.acceptable = Set(acceptable.prefix(100_000).filter(codes.contains))
        }
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
