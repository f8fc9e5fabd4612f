public import Foundation
public import ResourceKit

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension StubTransport {
    /// Answers `method path` with a response whose body the responder streams, for
    /// `NetworkSession.bytes(_:)`; ``send(_:)`` reads that body whole.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match, optionally with a query.
    ///   - responder: Produces the head and the body (see `ResponseBody.makeStream(bufferingLimit:)`).
    public func stubStreaming(_ method: HTTPMethod, _ path: String, responder: @escaping StreamResponder) {
        let collect: Responder = { request in
            let streamed = try await responder(request)
            var body = Data()
            for try await chunk in streamed.body { body.append(chunk) }
            return HTTPResponse(
                statusCode: streamed.statusCode, headers: streamed.headers, body: body, url: streamed.url)
        }
        add(Route(method: method, path: path, query: nil, responder: collect, streamer: responder))
    }

    /// Answers `method path` with a body of `chunks`, written one by one as the reader makes room, the first
    /// at once and each next one `interval` later on `clock`: a slow or bursty server, on a ``ManualClock``
    /// if you like. The reader going away, or the calling task's cancellation, stops the writing and counts in
    /// ``cancellationCount``.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The URL path to match, optionally with a query.
    ///   - status: The status code.
    ///   - headers: The response headers.
    ///   - chunks: The body, chunk by chunk.
    ///   - interval: The wait before each chunk after the first; `nil` for none. A negative wait counts as none,
    ///     and one above 10⁹ seconds as 10⁹ seconds.
    ///   - clock: The clock of the waits.
    ///   - bufferingLimit: How many unread bytes may wait before the writing waits for the reader.
    public func stub(
        _ method: HTTPMethod,
        _ path: String,
        status: Int = 200,
        headers: HTTPHeaders = HTTPHeaders(),
        chunks: [Data],
        every interval: Duration? = nil,
        on clock: any Clock<Duration> = ContinuousClock(),
        bufferingLimit: Int = 1 << 20
    ) {
        stubStreaming(method, path) { [weak self] request in
            let (body, writer) = ResponseBody.makeStream(bufferingLimit: bufferingLimit)
            let writing = Task {
                for (index, chunk) in chunks.enumerated() {
                    do {
                        if index > 0, let interval {
                            try await clock.sleep(for: min(max(interval, .zero), RealTimeLimit.longest))
                        }
                        try await writer.write(chunk)
                    } catch {
                        return
                    }
                }
                writer.finish()
            }
            writer.onTermination { [weak self] in
                writing.cancel()
                self?.recordCancellation()
            }
            return StreamedResponse(statusCode: status, headers: headers, url: request.url, body: body)
        }
    }

    /// Like ``send(_:)``; a stub made with ``stubStreaming(_:_:responder:)`` or `chunks:` answers with its body as it comes, any
    /// other with its whole body as one chunk.
    public func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        // A streamed body (a file, a form with files) is read here, so that stubs and the log see its bytes.
        let request = try request.readingBodyStream()
        let route = try route(for: request)
        do {
            if let streamer = route.streamer { return try await streamer(request) }
            let response = try await route.responder(request)
            return StreamedResponse(
                statusCode: response.statusCode, headers: response.headers, url: response.url,
                body: ResponseBody(response.body))
        } catch {
            throw NetworkError(error)
        }
    }
}
