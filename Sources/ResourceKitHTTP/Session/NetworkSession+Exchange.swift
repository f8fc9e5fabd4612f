#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// One call of ``NetworkSession/response(for:)``: the request as built (no credentials yet) and the
/// policies that apply to it.
struct Exchange: Sendable {
    var request: URLRequest
    var base: URL?
    /// `Authorization`, `Proxy-Authorization` and `Cookie` as the endpoint set them: they go to every hop on
    /// the origin of `request`, and to no other.
    var ownCredentials: HTTPHeaders
    var redirects: RedirectPolicy
    var retry: RetryPolicy
    /// Time allowed from the start; `nil` for none.
    var deadline: Duration?
    /// A conditional request: a `304 Not Modified` is its answer, not a failure.
    var acceptsNotModified = false
    /// The caller reads the body as it arrives (``NetworkSession/bytes(_:)``): the deadline ends at the
    /// response's head.
    var streams = false
}

extension NetworkSession {
    /// Sends the exchange: attempts, redirects, authentication refresh and retries, all before the deadline.
    nonisolated func perform(
        _ exchange: Exchange
    ) async throws(NetworkError) -> HTTPResponse {
        let deadline = exchange.deadline.map { timeline.now + $0 }
        // The attempt and whether credentials were refreshed live in the trace: as locals of their own, they
        // would grow this frame past the task's first allocator slab on the longest paths (see the budgets).
        var call = begin(exchange)
        defer { inFlight.end(call.id) }
        while true {
            let failure: NetworkError
            var failedResponse: HTTPResponse?
            // The first attempt's start is emitted by `begin`.
            if call.attempt > 1 || call.refreshed, feed.isActive { emitStarted(&call, exchange, attempt: call.attempt) }
            do throws(NetworkError) {
                let (response, credential) = try await follow(exchange, deadline: deadline, call: call.id)
                if feed.isActive {
                    emitFinished(
                        &call, exchange, attempt: call.attempt, status: response.statusCode, bytes: response.body.count,
                        error: nil)
                }
                // A caller's stream cannot be sent again: its `401` is its answer, and it starts no refresh.
                if let authentication, let credential, !call.refreshed, authentication.isFailure(response),
                    Self.bodyCanBeSentAgain(exchange.request)
                {
                    call.refreshed = true
                    try await refresh(authentication, from: credential, call, exchange, call.attempt, deadline)
                    continue
                }
                if exchange.acceptsNotModified, response.statusCode == 304 { return response }
                do {
                    try validationProvider.validate(response)
                    return response
                } catch {
                    failure = error
                    failedResponse = response
                }
            } catch {
                failure = error
                if feed.isActive {
                    emitFinished(&call, exchange, attempt: call.attempt, status: nil, bytes: nil, error: error)
                }
            }
            guard
                let wakeUp = retryInstant(
                    after: failure, response: failedResponse, attempt: call.attempt, exchange: exchange,
                    deadline: deadline,
                    call: call)
            else { throw failure }
            do {
                try await timeline.sleep(until: wakeUp)
            } catch {
                if feed.wants(.error) { emit(.requestFailed, call, exchange, attempt: call.attempt, error: .cancelled) }
                throw .cancelled
            }
            call.attempt += 1
        }
    }

    /// Waits for the credential's refresh and tells the feed how it went. Apart from `perform`, so that the
    /// rare refresh does not grow every request's async frame.
    private nonisolated func refresh(
        _ authentication: any AuthenticationHandling, from credential: any Sendable, _ call: RequestTrace,
        _ exchange: Exchange, _ attempt: Int, _ deadline: Duration?
    ) async throws(NetworkError) {
        do throws(NetworkError) {
            try await waitForRefresh(authentication, from: credential, deadline: deadline)
        } catch {
            if feed.wants(.info) { emit(.credentialRefresh, call, exchange, attempt: attempt, error: error) }
            throw error
        }
        if feed.wants(.info) { emit(.credentialRefresh, call, exchange, attempt: attempt) }
    }

    /// When attempt `attempt`, which failed with `failure`, is to be sent again and after what wait, or `nil`
    /// when it is not: the
    /// policy does not retry it, the caller cancelled, `Retry-After` asks for too long, or the wait would end
    /// past the deadline.
    ///
    /// Emits what it decides: synchronous, so that none of it sits in `perform`'s async frame, which
    /// every request allocates.
    @inline(never)
    private nonisolated func retryInstant(
        after failure: NetworkError,
        response: HTTPResponse?,
        attempt: Int,
        exchange: Exchange,
        deadline: Duration?,
        call: RequestTrace
    ) -> Duration? {
        guard
            let (wakeUp, delay) = retryInstant(
                after: failure, response: response, attempt: attempt, exchange: exchange, deadline: deadline)
        else {
            if feed.wants(.error) { emit(.requestFailed, call, exchange, attempt: attempt, error: failure) }
            return nil
        }
        if feed.wants(.info) { emit(.retry, call, exchange, attempt: attempt, error: failure, delay: delay) }
        inFlight.setAttempt(attempt + 1, of: call.id)
        return wakeUp
    }

    private nonisolated func retryInstant(
        after failure: NetworkError,
        response: HTTPResponse?,
        attempt: Int,
        exchange: Exchange,
        deadline: Duration?
    ) -> (wakeUp: Duration, delay: Duration)? {
        let policy = exchange.retry
        let now = timeline.now
        guard attempt < policy.maximumAttempts, !Task.isCancelled,
            // A stream body was read by the attempt that failed, and cannot be read again.
            Self.bodyCanBeSentAgain(exchange.request),
            policy.allows(
                method: exchange.request.httpMethod ?? "GET", headers: exchange.request.allHTTPHeaderFields ?? [:]),
            policy.isRetryable(failure, response: response),
            // The deadline itself is never retried.
            !(failure == .timeout && deadline.map { now >= $0 } == true)
        else { return nil }
        var delay = policy.backoff(beforeRetry: attempt)
        if let response, let asked = RetryAfter.delay(in: response.headers) {
            guard asked <= policy.maximumRetryAfter else { return nil }
            delay = asked
        }
        let wakeUp = now + delay
        if let deadline, wakeUp >= deadline { return nil }
        return (wakeUp, delay)
    }

    /// Sends one attempt and follows its redirects. Returns the final response and the credential the
    /// authenticator applied to its request, if any.
    private nonisolated func follow(
        _ exchange: Exchange,
        deadline: Duration?,
        call: UInt64
    ) async throws(NetworkError) -> (HTTPResponse, (any Sendable)?) {
        var hop = exchange.request
        var hops = 0
        while true {
            var outgoing = hop
            // A streamed body is read by the transport: each hop and attempt gets a fresh stream of it.
            if let body = hop.httpBodyStream as? BodyInputStream {
                outgoing.httpBodyStream = try body.body.makeStream()
            }
            var credential: (any Sendable)?
            if (!adapters.isEmpty || authentication != nil), credentialScope.contains(hop.url, base: exchange.base) {
                (outgoing, credential) = try await adapt(outgoing, deadline: deadline)
                // Adapters set headers themselves: nothing they add may break the request apart either.
                try HeaderValidation.check(outgoing.allHTTPHeaderFields ?? [:])
            }
            if Task.isCancelled { throw .cancelled }
            var response: HTTPResponse
            do throws(NetworkError) {
                response =
                    exchange.streams
                    ? try await stream(outgoing, deadline: deadline) : try await send(outgoing, deadline: deadline)
            } catch {
                // A file that could not be read says so, rather than the transport's aborted transfer.
                throw (outgoing.httpBodyStream as? BodyInputStream)?.body.takeFailure() ?? error
            }
            // A transport that reports no URL answered the request sent: relative `Link`s resolve against it.
            if response.url == nil { response.url = outgoing.url }
            guard exchange.redirects.maximumHops > 0,
                var next = try Redirect.next(after: hop, response: response, redaction: redaction)
            else { return (response, credential) }
            guard hops < exchange.redirects.maximumHops else {
                throw .transport(
                    code: .httpTooManyRedirects,
                    message: "more than \(exchange.redirects.maximumHops) redirects")
            }
            hops += 1
            try Self.checkBodyCanBeRepeated(next, after: response, redaction: redaction)
            if feed.isActive { emitRedirect(call, exchange, status: response.statusCode, from: hop, to: next) }
            addCredentials(to: &next, of: exchange)
            hop = next
        }
    }

    /// Whether the request's body can be sent again: none, bytes, files, but not a caller's stream.
    static func bodyCanBeSentAgain(_ request: URLRequest) -> Bool {
        (request.httpBodyStream as? BodyInputStream)?.body.isReplayable ?? true
    }

    /// Fails a redirect that would send a stream body again (a `307`/`308`): a stream can be read once.
    @inline(never)
    private static func checkBodyCanBeRepeated(
        _ next: URLRequest, after response: HTTPResponse, redaction: LogRedaction
    ) throws(NetworkError) {
        guard let body = next.httpBodyStream as? BodyInputStream, !body.body.isReplayable else { return }
        throw .transport(
            code: .requestBodyStreamExhausted,
            message: "the \(response.statusCode) redirect to \(redaction.redact(next.url)) asks for the body again, "
                + "and a stream body can be sent once")
    }

    /// Gives a redirect hop, which carries no credential header, those a direct request to its URL gets: the
    /// session's default `Authorization`, `Proxy-Authorization` and `Cookie` when the URL is in the credential
    /// scope (as ``buildRequest(for:)`` adds them), and the endpoint's own, which win, when the URL is on the
    /// endpoint's origin. Adapters and the authenticator run on every hop by the same scope.
    private nonisolated func addCredentials(to hop: inout URLRequest, of exchange: Exchange) {
        guard let url = hop.url else { return }
        var credentials = HTTPHeaders()
        if defaultHeadersCarryCredentials, credentialScope.contains(url, base: exchange.base) {
            for name in Redirect.credentialHeaders { credentials[name] = defaultHeaders[name] }
        }
        if exchange.ownCredentials.count > 0, let origin = Origin(url),
            origin == exchange.request.url.flatMap(Origin.init)
        {
            credentials = credentials.merging(exchange.ownCredentials)
        }
        for field in credentials { hop.setValue(field.value, forHTTPHeaderField: field.name) }
    }

    /// Runs the adapters, then the authenticator, on `request`: part of the attempt, so within the deadline. At
    /// the deadline the call fails with ``NetworkError/timeout`` and their work is cancelled, whether or not
    /// it honours cancellation.
    private nonisolated func adapt(
        _ request: URLRequest, deadline: Duration?
    ) async throws(NetworkError) -> (URLRequest, (any Sendable)?) {
        let adapters = self.adapters
        let authentication = self.authentication
        @Sendable func run() async throws(NetworkError) -> (URLRequest, (any Sendable)?) {
            var outgoing = request
            for adapter in adapters { outgoing = try await adapter.adapt(outgoing) }
            let credential = try await authentication?.authenticate(&outgoing)
            return (outgoing, credential)
        }
        guard let deadline else { return try await run() }
        if timeline.now >= deadline { throw .timeout }
        let adapted = Locked<(URLRequest, (any Sendable)?)?>(nil)
        _ = try await race(deadline) { race in
            .task(
                Self.abandonable {
                    do throws(NetworkError) {
                        let result = try await run()
                        adapted.withLock { $0 = result }
                        race.finish(.success(nil), fromTransport: true)
                    } catch {
                        race.finish(.failure(error), fromTransport: true)
                    }
                })
        }.get()
        guard let result = adapted.withLock({ $0 }) else { throw .cancelled }
        return result
    }

    /// Waits for the authenticator's refresh, at most until the deadline and only while the caller waits: the
    /// refresh itself runs on for the other requests that wait for it.
    private nonisolated func waitForRefresh(
        _ authentication: any AuthenticationHandling,
        from credential: any Sendable,
        deadline: Duration?
    ) async throws(NetworkError) {
        _ = try await race(deadline) { race in
            .task(
                Self.abandonable {
                    do throws(NetworkError) {
                        try await authentication.recover(from: credential)
                        race.finish(.success(nil), fromTransport: true)
                    } catch {
                        race.finish(.failure(error), fromTransport: true)
                    }
                })
        }.get()
    }

    /// Sends one request through the transport, or fails with ``NetworkError/timeout`` at the deadline and
    /// cancels it, whether or not the transport honours cancellation.
    private nonisolated func send(
        _ request: URLRequest,
        deadline: Duration?
    ) async throws(NetworkError) -> HTTPResponse {
        guard let deadline else { return try await transport.send(request) }
        if timeline.now >= deadline { throw .timeout }
        let transport = self.transport
        let result = await race(deadline) { race in
            if let direct = transport as? any CallbackTransport {
                // No task in between: the transport's completion resumes the caller.
                return .request(direct.start(request) { race.finish($0.map { $0 }, fromTransport: true) })
            }
            return .task(
                Self.abandonable {
                    do throws(NetworkError) {
                        // The answer first, in a statement of its own: nothing evaluated before the suspension has
                        // to survive it in the same expression.
                        let response = try await transport.send(request)
                        race.finish(.success(response), fromTransport: true)
                    } catch {
                        race.finish(.failure(error), fromTransport: true)
                    }
                })
        }
        // Only a refresh finishes without a response, and it never comes through here.
        guard let response = try result.get() else { throw .invalidResponse("the transport returned nothing") }
        return response
    }

    /// Sends one request through the transport's ``HTTPTransport/stream(_:)``, racing its head against the
    /// deadline. A successful response carries its body as `stream`; any other has its body read (up to
    /// ``streamedErrorBodyLimit``), so that validation, retries and server errors see it as `send` would.
    private nonisolated func stream(
        _ request: URLRequest,
        deadline: Duration?
    ) async throws(NetworkError) -> HTTPResponse {
        if let deadline, timeline.now >= deadline { throw .timeout }
        let transport = self.transport
        let result = await race(deadline) { race in
            .task(
                Self.abandonable {
                    do throws(NetworkError) {
                        let streamed = try await transport.stream(request)
                        var response = HTTPResponse(
                            statusCode: streamed.statusCode, headers: streamed.headers, url: streamed.url)
                        response.stream = streamed.body
                        if !(200..<300).contains(streamed.statusCode) {
                            response.body = try await Self.prefix(of: streamed.body, upTo: Self.streamedErrorBodyLimit)
                            response.stream = nil
                        }
                        race.finish(.success(response), fromTransport: true)
                    } catch {
                        race.finish(.failure(error), fromTransport: true)
                    }
                })
        }
        guard let response = try result.get() else { throw .invalidResponse("the transport returned nothing") }
        return response
    }

    /// How much of a streamed response that is not a success is read, for its error.
    static let streamedErrorBodyLimit = 1 << 20

    /// The body's first `limit` bytes; then the transfer is cancelled, and what still arrives is dropped.
    private static func prefix(of body: ResponseBody, upTo limit: Int) async throws(NetworkError) -> Data {
        var data = Data()
        for try await chunk in body {
            data.append(chunk.prefix(limit - data.count))
            if data.count >= limit {
                body.cancel()
                break
            }
        }
        return data
    }

    /// Runs the work `start` begins against the deadline (if any) and the caller's cancellation, whichever
    /// ends first; `start` returns what stops the work.
    private nonisolated func race(
        _ deadline: Duration?,
        start: (DeadlineRace) -> DeadlineRace.Work
    ) async -> Result<DeadlineRace.Value, NetworkError> {
        let race = DeadlineRace(scheduler: deadlines)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.begin(continuation)
                let work = start(race)
                race.attach(work, deadline: deadline)
            }
        } onCancel: {
            race.finish(.failure(.cancelled), fromTransport: false)
        }
    }

    /// Runs `body` in a task of its own, so that a deadline can abandon it, started at once on this thread
    /// where the platform allows: work that finishes without suspending costs no thread hop.
    private static func abandonable(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            return Task.immediate(operation: body)
        } else {
            return Task(operation: body)
        }
    }
}
