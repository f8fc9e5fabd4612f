#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// A call of `perform(_:)`: its id in the registry of calls in flight, its attempt and, once someone listens,
/// the request as its events name it and when its attempt in flight started. Kept in the call's frame, so
/// that an event costs no registry lookup.
struct RequestTrace {
    let id: UInt64
    var subject: DiagnosticSubject?
    /// When the attempt's `requestStarted` was emitted, in nanoseconds of the session's timeline; `Int64.min`
    /// when it was not.
    private var attemptStart = Int64.min
    private var attemptNumber: Int32 = 1
    /// Whether the call's credentials were refreshed once.
    var refreshed = false

    /// The attempt in flight, from 1.
    var attempt: Int {
        get { Int(attemptNumber) }
        set { attemptNumber = Int32(clamping: newValue) }
    }

    init(id: UInt64, subject: DiagnosticSubject? = nil) {
        self.id = id
        self.subject = subject
    }

    /// When the attempt in flight started, if its start was emitted.
    var attemptStartedAt: Duration? {
        get { attemptStart == .min ? nil : .nanoseconds(attemptStart) }
        // `.min` stands for none, so the earliest time kept is one nanosecond after it.
        set { attemptStart = newValue.map { max($0.clampedNanoseconds, .min + 1) } ?? .min }
    }
}

/// The diagnostic events of `perform(_:)`, which the logger receives too: built here, in functions that are never
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
                method: exchange.request.httpMethod ?? "GET", url: redaction.redact(exchange.request.url), source: nil)
        var record = DiagnosticRecord(kind)
        record.requestID = call.id
        record.attempt = attempt
        record.time = delay
        feed.emit(record, about: subject, error: error.map(redaction.redact))
    }

    /// Registers the call in flight; when someone listens, emits its first attempt's start, with the request as
    /// events name it made once for all its events.
    @inline(never) nonisolated func begin(_ exchange: Exchange) -> RequestTrace {
        let now = timeline.now
        let method = exchange.request.httpMethod ?? "GET"
        let url = exchange.request.url
        guard feed.isActive else { return RequestTrace(id: inFlight.begin(method: method, url: url, at: now)) }
        let subject = requestSubject(method: method, url: url)
        var call = RequestTrace(id: inFlight.begin(method: method, url: url, at: now), subject: subject)
        call.attemptStartedAt = now
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = call.id
        record.attempt = 1
        feed.emit(record, about: subject)
        return call
    }

    /// The request as events name it: the last call's subject again for the same method and URL (a resource
    /// read again), a new one otherwise.
    nonisolated func requestSubject(method: String, url: URL?) -> DiagnosticSubject {
        lastRequestSubject.withLock { last in
            if let last, last.source == url, last.method == method { return last }
            let subject = DiagnosticSubject(
                method: method, url: redaction.redact(url), source: url)
            last = subject
            return subject
        }
    }

    /// Emits a later attempt's start. The subject is made here when the first listener came after the call
    /// began; the call keeps it.
    @inline(never) nonisolated func emitStarted(_ call: inout RequestTrace, _ exchange: Exchange, attempt: Int) {
        guard let subject = call.subject ?? inFlight.subject(of: call.id, redaction: redaction) else { return }
        call.subject = subject
        call.attemptStartedAt = timeline.now
        var record = DiagnosticRecord(.requestStarted)
        record.requestID = call.id
        record.attempt = attempt
        feed.emit(record, about: subject)
    }

    /// Emits nothing for an attempt whose start was not emitted (the first listener came in between).
    /// Takes the response's numbers, not the response: an optional made of it would be a copy.
    @inline(never) nonisolated func emitFinished(
        _ call: inout RequestTrace, _ exchange: Exchange, attempt: Int, status: Int?, bytes: Int?, error: NetworkError?
    ) {
        guard let subject = call.subject, let started = call.attemptStartedAt else { return }
        call.attemptStartedAt = nil
        var record = DiagnosticRecord(.requestFinished)
        record.requestID = call.id
        record.attempt = attempt
        record.time = timeline.now - started
        record.status = status
        record.bytes = bytes
        record.notModified = exchange.acceptsNotModified && status == 304
        feed.emit(record, about: subject, error: error.map(redaction.redact))
    }

    /// Emits a redirect the call follows, with a subject of its own that names where it leads.
    @inline(never) nonisolated func emitRedirect(
        _ call: UInt64, _ exchange: Exchange, status: Int, from hop: URLRequest, to next: URLRequest
    ) {
        let subject = DiagnosticSubject(
            method: hop.httpMethod ?? "GET", url: redaction.redact(hop.url), source: nil,
            location: redaction.redact(next.url))
        var record = DiagnosticRecord(.redirect)
        record.requestID = call
        record.status = status
        feed.emit(record, about: subject)
    }
}
