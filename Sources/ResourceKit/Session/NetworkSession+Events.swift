#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// The log and diagnostic events of `perform(_:)`: built here, in functions that are never
/// inlined into the request's async frames (see the allocation budgets).
extension NetworkSession {
    // The events are built in synchronous functions, never inlined: as locals of `perform`, they would grow
    // its async frame past the task's first allocator slab, one more allocation per request whether or not
    // anyone listens.
    @inline(never) nonisolated func emit(
        _ kind: DiagnosticEvent.Kind, _ id: UInt64, _ exchange: Exchange, attempt: Int, error: NetworkError? = nil,
        delay: Duration? = nil
    ) {
        var event = DiagnosticEvent(kind)
        event.requestID = id
        event.method = exchange.request.httpMethod ?? "GET"
        event.url = redaction.redact(exchange.request.url)
        event.attempt = attempt
        event.error = error.map(redaction.redact)
        event.delay = delay
        feed.emit(event)
    }

    @inline(never) nonisolated func emitStarted(_ id: UInt64, _ exchange: Exchange, attempt: Int) {
        inFlight.setAttemptStart(timeline.now, of: id)
        emit(.requestStarted, id, exchange, attempt: attempt)
    }

    /// Emits nothing for an attempt whose start was not emitted (the first listener came in between).
    @inline(never) nonisolated func emitFinished(
        _ id: UInt64, _ exchange: Exchange, attempt: Int, response: HTTPResponse?, error: NetworkError?
    ) {
        guard let started = inFlight.attemptStart(of: id) else { return }
        var event = DiagnosticEvent(.requestFinished)
        event.requestID = id
        event.method = exchange.request.httpMethod ?? "GET"
        event.url = redaction.redact(exchange.request.url)
        event.attempt = attempt
        event.duration = timeline.now - started
        event.status = response?.statusCode
        event.bytes = response?.body.count
        event.notModified = exchange.acceptsNotModified && response?.statusCode == 304
        event.error = error.map(redaction.redact)
        feed.emit(event)
    }

    // Log events are built in synchronous functions, off the async frames every request allocates.
    @inline(never) nonisolated func logRequest(_ request: URLRequest, url: String) {
        let headers = redaction.redact(HTTPHeaders(request.allHTTPHeaderFields ?? [:]))
        logger.log(.debug, .request(method: request.httpMethod ?? "GET", url: url, headers: headers))
    }

    @inline(never) nonisolated func logRedirect(_ response: HTTPResponse, from url: String, to next: URLRequest) {
        logger.log(.debug, .redirect(status: response.statusCode, from: url, to: redaction.redact(next.url)))
    }

    @inline(never) nonisolated func logResponse(_ response: HTTPResponse, url: String, duration: Duration) {
        logger.log(
            .debug,
            .response(
                status: response.statusCode, url: url, headers: redaction.redact(response.headers),
                bodySize: response.body.count, duration: duration))
    }
}
