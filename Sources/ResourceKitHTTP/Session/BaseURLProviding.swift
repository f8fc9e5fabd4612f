public import Foundation

/// Supplies the base URL for each request.
///
/// It is asked once for every request, so a provider can switch servers at run time (a region picker,
/// a staging toggle). `URL` and `String` conform.
public protocol BaseURLProviding: Sendable {
    /// Returns the base URL for the next request.
    /// - Returns: An absolute URL with a scheme and host.
    /// - Throws: ``NetworkError/invalidURL(_:)`` when no usable URL is available.
    func resolveBaseURL() async throws(NetworkError) -> URL
}

extension URL: BaseURLProviding {
    /// Returns this URL if it has a scheme and a host.
    /// - Throws: ``NetworkError/invalidURL(_:)`` otherwise.
    public func resolveBaseURL() async throws(NetworkError) -> URL {
        try checkedAsBase()
    }

    /// This URL if it has a scheme and a host.
    func checkedAsBase() throws(NetworkError) -> URL {
        guard let scheme, !scheme.isEmpty, let host, !host.isEmpty else {
            throw .invalidURL("base URL '\(absoluteString)' needs a scheme and a host")
        }
        return self
    }
}

extension String: BaseURLProviding {
    /// Parses this string as a URL with a scheme and a host.
    /// - Throws: ``NetworkError/invalidURL(_:)`` when it is not one.
    public func resolveBaseURL() async throws(NetworkError) -> URL {
        try checkedAsBase()
    }

    /// This string as a URL with a scheme and a host.
    func checkedAsBase() throws(NetworkError) -> URL {
        guard let url = URL(string: self) else { throw .invalidURL("base URL '\(self)' is not a URL") }
        return try url.checkedAsBase()
    }
}

extension URLBuilder.Base {
    /// The base of a provider that answers the same on every request, a `URL` or a `String`, taken apart
    /// now, with the error it would fail every request with; `nil` for any other provider, asked each time.
    static func fixed(for provider: any BaseURLProviding) -> Result<URLBuilder.Base, NetworkError>? {
        let url: URL
        do throws(NetworkError) {
            if let fixed = provider as? URL {
                url = try fixed.checkedAsBase()
            } else if let fixed = provider as? String {
                url = try fixed.checkedAsBase()
            } else {
                return nil
            }
            return .success(URLBuilder.Base(url))
        } catch {
            return .failure(error)
        }
    }
}

/// A base-URL provider backed by a closure.
///
/// ```swift
/// let baseURL = DynamicBaseURL { try await settings.selectedRegion().apiURL }
/// ```
public struct DynamicBaseURL: BaseURLProviding {
    private let resolve: @Sendable () async throws -> URL

    /// Creates a provider that calls `resolve` for every request.
    /// - Parameter resolve: Returns the current base URL. What it throws, mapped with
    ///   ``NetworkError/init(_:)``, fails the request.
    public init(_ resolve: @escaping @Sendable () async throws -> URL) {
        self.resolve = resolve
    }

    /// Calls the closure.
    /// - Throws: What the closure threw, mapped with ``NetworkError/init(_:)``;
    ///   ``NetworkError/invalidURL(_:)`` for a URL without a scheme or a host.
    public func resolveBaseURL() async throws(NetworkError) -> URL {
        let url: URL
        do {
            url = try await resolve()
        } catch {
            throw NetworkError(error)
        }
        return try await url.resolveBaseURL()
    }
}
