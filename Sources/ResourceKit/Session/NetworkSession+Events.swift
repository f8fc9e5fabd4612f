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
        let subject =
            inFlight.describe(id, redaction: redaction)?.subject
            ?? DiagnosticSubject(
                method: exchange.request.httpMethod ?? "GET", url: redaction.redact(exchange.request.url))
        var record = DiagnosticRecord(kind)
        record.requestID = id
        record.attempt = attempt
        record.error = error.map(redaction.redact)
        record.time = delay
        feed.emit(record, about: subject)
    }

    /// Registers the call in flight; when someone listens, emits its first attempt's start, with the request as
    /// events name it made once for all its events.
    @inline(never) nonisolated func begin(_ exchange: Exchange) -> UInt64 {
        let now = timeline.now
        let method = exchange.request.httpMethod ?? "GET"
        let url = exchange.request.url
        guard feed.isActive else { return inFlight.begin(method: method, url: url, at: now) }
        let subject = DiagnosticSubject(method: method, url: redaction.redact(url))
        let id = inFlight.begin(method: method, url: url, at: now, subject: subject)
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = id
        record.attempt = 1
        feed.emit(record, about: subject)
        return id
    }

    /// The attempt's start time lives in the registry entry, with the request as events name it.
    @inline(never) nonisolated func emitStarted(_ id: UInt64, _ exchange: Exchange, attempt: Int) {
        guard let (subject, _) = inFlight.describe(id, start: timeline.now, redaction: redaction) else { return }
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = id
        record.attempt = attempt
        feed.emit(record, about: subject)
    }

    /// Emits nothing for an attempt whose start was not emitted (the first listener came in between).
    @inline(never) nonisolated func emitFinished(
        _ id: UInt64, _ exchange: Exchange, attempt: Int, response: HTTPResponse?, error: NetworkError?
    ) {
        guard let (subject, started) = inFlight.describe(id, redaction: redaction), let started else { return }
        var record = DiagnosticRecord(.requestFinished)
        record.requestID = id
        record.attempt = attempt
        record.time = timeline.now - started
        record.status = response?.statusCode
        record.bytes = response?.body.count
        record.notModified = exchange.acceptsNotModified && response?.statusCode == 304
        record.error = error.map(redaction.redact)
        feed.emit(record, about: subject)
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
