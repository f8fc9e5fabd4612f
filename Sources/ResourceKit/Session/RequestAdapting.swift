#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// An asynchronous hook that may change each outgoing request, such as adding authentication.
///
/// Adapters run in order after the session has built the request and before it is logged and sent.
public protocol RequestAdapting: Sendable {
    /// Returns the request to send.
    /// - Parameter request: The request built so far.
    /// - Returns: The adapted request.
    /// - Throws: ``NetworkError`` to abort the request.
    func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest
}

/// Adds `Authorization: Bearer <token>` with a token fetched for every request.
public struct BearerTokenAdapter: RequestAdapting {
    private let token: @Sendable () async throws(NetworkError) -> String?

    /// Creates the adapter.
    /// - Parameter token: Returns the current token, or `nil` to send no `Authorization` header.
    public init(token: @escaping @Sendable () async throws(NetworkError) -> String?) {
        self.token = token
    }

    /// Creates the adapter for a fixed token.
    /// - Parameter token: The token.
    public init(token: String) {
        self.token = { token }
    }

    /// Sets the header unless the request already has one.
    public func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        guard request.value(forHTTPHeaderField: "Authorization") == nil, let value = try await token() else {
            return request
        }
        // Checked here: Linux Foundation drops a header whose value has a line break, which would send the
        // request unauthenticated instead of failing.
        try HeaderValidation.check(name: "Authorization", value: value)
        var request = request
        request.setValue("Bearer \(value)", forHTTPHeaderField: "Authorization")
        return request
    }
}

/// A request adapter backed by a closure.
public struct RequestAdapter: RequestAdapting {
    private let body: @Sendable (URLRequest) async throws(NetworkError) -> URLRequest

    /// Creates an adapter.
    /// - Parameter adapt: Returns the request to send.
    public init(_ adapt: @escaping @Sendable (URLRequest) async throws(NetworkError) -> URLRequest) {
        self.body = adapt
    }

    /// Calls the closure.
    public func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
        try await body(request)
    }
}
