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
///
/// A transport sends exactly the request it is given and returns the response it gets, `3xx` included:
/// the session follows redirects itself, so that credentials stay on their origin and a `307` keeps its
/// body. A transport that followed redirects on its own would bypass that. It need not enforce timeouts:
/// the session ends the call at its deadline and cancels the transport's work (and stops waiting for a
/// transport that ignores cancellation).
public protocol HTTPTransport: Sendable {
    /// Sends the request.
    /// - Parameter request: The fully built request.
    /// - Returns: The response, whatever its status code.
    /// - Throws: ``NetworkError`` when no complete response arrived.
    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse
}
