#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// A call of `perform(_:)` as its events know it: its id in the registry of calls in flight and, once someone
/// listens, the request as its events name it, which also holds when its attempt in flight started. Kept in the
/// call's frame, so that an event costs no registry lookup.
struct RequestTrace {
    let id: UInt64
    var subject: DiagnosticSubject?
}

/// The log and diagnostic events of `perform(_:)`: built here, in functions that are never
/// inlined into the request's async frames (see the allocation budgets).
extension NetworkSession {
    // The events are built in synchronous functions, never inlined: as locals of `perform`, they would grow
    // its async frame past the task's first allocator slab, one more allocation per request whether or not
    // anyone listens.
    @inline(never) nonisolated func emit(
        _ kind: DiagnosticEvent.Kind, _ call: RequestTrace, _ exchange: Exchange, attempt: Int,
        error: NetworkError? = nil, delay: Duration? = nil
    ) {
        let subject =
            call.subject ?? inFlight.subject(of: call.id, redaction: redaction)
            ?? DiagnosticSubject(
                method: exchange.request.httpMethod ?? "GET", url: redaction.redact(exchange.request.url))
        var record = DiagnosticRecord(kind)
        record.requestID = call.id
        record.attempt = attempt
        record.error = error.map(redaction.redact)
        record.time = delay
        feed.emit(record, about: subject)
    }

    /// Registers the call in flight; when someone listens, emits its first attempt's start, with the request as
    /// events name it made once for all its events.
    @inline(never) nonisolated func begin(_ exchange: Exchange) -> RequestTrace {
        let now = timeline.now
        let method = exchange.request.httpMethod ?? "GET"
        let url = exchange.request.url
        guard feed.isActive else { return RequestTrace(id: inFlight.begin(method: method, url: url, at: now)) }
        let subject = DiagnosticSubject(method: method, url: redaction.redact(url))
        subject.attemptStartedAt = now
        let id = inFlight.begin(method: method, url: url, at: now)
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = id
        record.attempt = 1
        feed.emit(record, about: subject)
        return RequestTrace(id: id, subject: subject)
    }

    /// Emits a later attempt's start. The subject is made here when the first listener came after the call
    /// began; the call keeps it.
    @inline(never) nonisolated func emitStarted(_ call: inout RequestTrace, _ exchange: Exchange, attempt: Int) {
        guard let subject = call.subject ?? inFlight.subject(of: call.id, redaction: redaction) else { return }
        call.subject = subject
        subject.attemptStartedAt = timeline.now
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = call.id
        record.attempt = attempt
        feed.emit(record, about: subject)
    }

    /// Emits nothing for an attempt whose start was not emitted (the first listener came in between).
    @inline(never) nonisolated func emitFinished(
        _ call: RequestTrace, _ exchange: Exchange, attempt: Int, response: HTTPResponse?, error: NetworkError?
    ) {
        guard let subject = call.subject, let started = subject.attemptStartedAt else { return }
        subject.attemptStartedAt = nil
        var record = DiagnosticRecord(.requestFinished)
        record.requestID = call.id
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
