#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// Sends one request and returns the complete response: the seam below ``NetworkSession``.
///
/// ``URLSessionTransport`` is the default. `ResourceKitTesting` provides `StubTransport` and
/// `InMemoryBackend`, so tests run the session's real URL building, validation and decoding code.
/// A transport reports cancellation of the calling task as ``NetworkError/cancelled``.
public protocol HTTPTransport: Sendable {
    /// Sends the request.
    /// - Parameter request: The fully built request.
    /// - Returns: The response, whatever its status code.
    /// - Throws: ``NetworkError`` when no complete response arrived.
    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse
}
