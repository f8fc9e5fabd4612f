import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What logged events hide: a redirect's location goes through the URL redaction, and so do the URL-valued
/// headers inside the errors of `.retry` and `.requestFailed` events.
@Suite(.timeLimit(.minutes(1))) struct LogRedactionTests {
    static let location = "http://bob:pw@login.test/cb?access_token=t0k&page=2"
    static let redactedLocation = "http://redacted@login.test/cb?access_token=redacted&page=2"

    @Test func aRedirectsLocationIsRedactedInItsRedirectEvent() async throws {
        let transport = ScriptedTransport([
            .status(302, headers: ["Location": Self.location, "Content-Location": "/api/x?token=t0k"]), .status(204),
        ])
        let logger = EventCollector()
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport, logger: logger)
        try await session.send(Endpoint(.get, "posts"))
        let redirects = logger.events.filter { $0.kind == .redirect }
        #expect(redirects.count == 1)
        #expect(redirects.first?.status == 302)
        #expect(redirects.first?.method == "GET")
        #expect(redirects.first?.url == "http://test.local/api/posts")
        #expect(redirects.first?.location == Self.redactedLocation)
        #expect(redirects.first?.requestID == logger.events.first?.requestID)
        #expect(!logger.events.map(\.description).joined().contains("t0k"))
        // The request itself went where the server said.
        #expect(transport.requests.last?.url?.absoluteString == Self.location)
    }

    @Test(arguments: [
        ("/next?access_token=t0k", "/next?access_token=redacted"),
        ("https://a:b@cdn.test/f?sig=t0k#frag", "https://redacted@cdn.test/f?sig=redacted#frag"),
        ("http://u:p@[::1/x?token=t0k", "redacted"),
        ("https://cdn.test/clean?page=2", "https://cdn.test/clean?page=2"),
    ])
    func urlValuedHeadersAreRedactedAsURLs(value: String, expected: String) {
        let headers = LogRedaction.standard.redact(
            ["Location": value, "content-location": value, "Referer": value, "X-Other": value])
        #expect(headers["Location"] == expected)
        #expect(headers["Content-Location"] == expected)
        #expect(headers["Referer"] == expected)
        #expect(headers["X-Other"] == value)
    }

    @Test func everyTargetOfALinkHeaderIsRedactedAndItsParametersKept() {
        let link =
            #"<https://api.test/items?page=2&access_token=t0k>; rel="next", </items?token=t0k>; title="a <b> \"c\"", "#
            + #"<http://u:p@api.test/last"#
        let redacted = LogRedaction.standard.redact(["Link": link])["Link"]
        #expect(
            redacted
                == #"<https://api.test/items?page=2&access_token=redacted>; rel="next", </items?token=redacted>; "#
                + #"title="a <b> \"c\"", <http://redacted@api.test/last"#)
    }

    @Test func theErrorsInRetryAndFailureEventsHaveTheirHeadersRedacted() async throws {
        let clock = ManualClock()
        let headers: HTTPHeaders = ["Set-Cookie": "sid=t0k", "Location": Self.location, "Retry-After": "1"]
        let transport = ScriptedTransport([.status(503, headers: headers)])
        let logger = EventCollector()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            retry: RetryPolicy(maximumAttempts: 2, jitter: .none), timeLimit: nil, clock: clock, logger: logger)
        let task = Task { try await session.send(Endpoint(.get, "posts")) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        let thrown = try #require(await #expect(throws: NetworkError.self) { try await task.value })
        // The caller's error keeps what the server said; only the logged copies are redacted.
        #expect(thrown.headers?["Set-Cookie"] == "sid=t0k")
        #expect(thrown.headers?["Location"] == Self.location)

        let logged = logger.events.compactMap { event -> NetworkError? in
            switch event.kind {
            case .retry, .requestFailed: event.error
            default: nil
            }
        }
        #expect(logged.count == 2)
        for error in logged {
            #expect(error.statusCode == 503)
            #expect(error.headers?["Set-Cookie"] == "<redacted>")
            #expect(error.headers?["Location"] == Self.redactedLocation)
            #expect(error.headers?["Retry-After"] == "1")
        }
        #expect(!logger.events.map(\.description).joined().contains("t0k"))
    }

    @Test func serverErrorsAndFailedRefreshesInFailureEventsAreRedactedToo() async throws {
        let secret: HTTPHeaders = ["set-cookie": "sid=t0k", "Link": "</x?token=t0k>; rel=next"]
        let server = NetworkError.server(ServerError(status: 400, message: "bad", headers: secret))
        let validation = RejectingValidation(error: server)
        let logger = EventCollector()
        let session = NetworkSession(
            baseURL: "http://test.local/api", validation: validation, transport: ScriptedTransport([.status(400)]),
            logger: logger)
        await #expect(throws: server) { try await session.send(Endpoint(.get, "posts")) }
        guard let last = logger.events.last, last.kind == .requestFailed, let logged = last.error?.serverError else {
            Issue.record("expected a failure event with a server error, got \(logger.events)")
            return
        }
        #expect(logged.headers["Set-Cookie"] == "<redacted>")
        #expect(logged.headers["Link"] == "</x?token=redacted>; rel=next")

        let refresh = ScriptedTransport([.status(401, headers: ["Set-Cookie": "sid=t0k"])])
        let failing = BearerAuthenticator(
            token: { "old" },
            refresh: { (_: String) async throws(NetworkError) -> String in
                throw .httpStatus(code: 401, body: Data(), headers: ["Set-Cookie": "sid=t0k"])
            })
        let authLogger = EventCollector()
        let authSession = NetworkSession(
            baseURL: "http://test.local/api", transport: refresh, authenticator: failing, logger: authLogger)
        await #expect(throws: NetworkError.self) { try await authSession.send(Endpoint(.get, "posts")) }
        guard let last = authLogger.events.last, last.kind == .requestFailed, let inner = last.error?.underlyingError
        else {
            Issue.record("expected a failure event with a failed refresh, got \(authLogger.events)")
            return
        }
        #expect(inner.headers?["Set-Cookie"] == "<redacted>")
    }

    /// A `Location` that cannot be followed is named in the error, which the `.requestFailed` event logs: the name
    /// goes through the URL redaction too.
    @Test func anUnfollowableLocationIsRedactedInTheErrorAndItsFailureEvent() async throws {
        let location = "ftp://bob:pw@files.test/x?access_token=t0k"
        let transport = ScriptedTransport([.status(302, headers: ["Location": location]), .status(204)])
        let logger = EventCollector()
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport, logger: logger)
        let error = await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "posts")) }
        #expect(
            error
                == .invalidResponse(
                    "the redirect's Location 'ftp://redacted@files.test/x?access_token=redacted' is not an http or https URL"
                ))
        #expect(logger.events.contains { $0.kind == .requestFailed })
        #expect(!logger.events.map(\.description).joined().contains("t0k"))
        #expect(!logger.events.map(\.description).joined().contains("pw"))
    }
}

/// Rejects every response with one error.
struct RejectingValidation: ValidationProviding {
    var error: NetworkError
    func validate(_ response: HTTPResponse) throws(NetworkError) { throw error }
}
