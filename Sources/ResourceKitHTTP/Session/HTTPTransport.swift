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

    /// Sends the request and returns once the response's head has arrived, its body still arriving.
    ///
    /// The default sends the request with ``send(_:)`` and returns its whole body as one chunk: a transport
    /// that can do better (``URLSessionTransport``) delivers the body as it comes, through
    /// ``ResponseBody/makeStream(bufferingLimit:)``, and stops its transfer when the body's reader goes
    /// (``ResponseBody/Writer/onTermination(_:)``).
    /// - Parameter request: The fully built request.
    /// - Returns: The head, and the body to come.
    /// - Throws: ``NetworkError`` when no response head arrived.
    func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse
}

extension HTTPTransport {
    /// Sends the request with ``send(_:)``; the body is one chunk.
    /// - Parameter request: The fully built request.
    /// - Returns: The response, its body complete.
    public func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        let response = try await send(request)
        return StreamedResponse(
            statusCode: response.statusCode, headers: response.headers, url: response.url,
            body: ResponseBody(response.body))
    }
}
