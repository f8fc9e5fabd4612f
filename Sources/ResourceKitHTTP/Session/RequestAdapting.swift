#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// An asynchronous hook that may change each outgoing request, such as adding authentication.
///
/// Adapters run in order on each attempt and redirect hop to an origin in the session's credential scope, after
/// the session has built the request and before it is sent, within the call's time limit. An attempt's
/// `requestStarted` event is emitted before its adapters run: it shows the request as the endpoint built it.
public protocol RequestAdapting: Sendable {
    /// Returns the request to send.
    /// - Parameter request: The request built so far.
    /// - Returns: The adapted request.
    /// - Throws: ``NetworkError`` to abort the request.
    func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest
}

/// Adds `Authorization: Bearer <token>` with a token fetched for every request.
///
/// ```swift
/// let adapter = BearerTokenAdapter(token: { try await keychain.token() })
/// ```
public struct BearerTokenAdapter: RequestAdapting {
    private let token: @Sendable () async throws -> String?

    /// Creates the adapter.
    /// - Parameter token: Returns the current token, or `nil` to send no `Authorization` header. What it
    ///   throws, mapped with ``NetworkError/init(_:)``, fails the request.
    public init(token: @escaping @Sendable () async throws -> String?) {
        self.token = token
    }

    /// Creates the adapter for a fixed token.
    /// - Parameter token: The token.
    public init(token: String) {
        self.token = { token }
    }

    /// Sets the header unless the request already has one.
    /// - Throws: What the `token` closure threw, mapped with ``NetworkError/init(_:)``;
    ///   ``NetworkError/invalidRequest(_:)`` for a token with CR, LF or NUL.
    public func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        guard request.value(forHTTPHeaderField: "Authorization") == nil else { return request }
        let fetched: String?
        do {
            fetched = try await token()
        } catch {
            throw NetworkError(error)
        }
        guard let value = fetched else { return request }
        // Checked here: Linux Foundation drops a header whose value has a line break, which would send the
        // request unauthenticated instead of failing.
        try HeaderValidation.check(name: "Authorization", value: value)
        var request = request
        request.setValue("Bearer \(value)", forHTTPHeaderField: "Authorization")
        return request
    }
}

/// A request adapter backed by a closure.
///
/// ```swift
/// let signing = RequestAdapter { try await signer.sign($0) }
/// ```
public struct RequestAdapter: RequestAdapting {
    private let body: @Sendable (URLRequest) async throws -> URLRequest

    /// Creates an adapter.
    /// - Parameter adapt: Returns the request to send. What it throws, mapped with ``NetworkError/init(_:)``,
    ///   fails the request.
    public init(_ adapt: @escaping @Sendable (URLRequest) async throws -> URLRequest) {
        self.body = adapt
    }

    /// Calls the closure.
    /// - Throws: What the closure threw, mapped with ``NetworkError/init(_:)``.
    public func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        do {
            return try await body(request)
        } catch {
            throw NetworkError(error)
        }
    }
}
