import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `NetworkSession.Configuration`: one value a session is made with, read back as `session.configuration`.
@Suite struct SessionConfigurationTests {
    struct Note: Codable, Equatable {
        var noteTitle: String
    }

    /// A credential that is a fixed token, applied as a header of its own.
    struct FixedToken: Authenticator {
        func credential() async throws(NetworkError) -> String? { "secret" }
        func apply(_ credential: String, to request: inout URLRequest) throws(NetworkError) {
            request.setValue(credential, forHTTPHeaderField: "X-Token")
        }
        func refresh(after failed: String) async throws(NetworkError) -> String { failed }
    }

    @Test func aConfigurationStartsAtTheDefaultsOfTheShorthandInitializer() {
        let configuration = NetworkSession.Configuration(baseURL: "https://api.test/v1")
        #expect((configuration.baseURL as? String) == "https://api.test/v1")
        #expect((configuration.validation as? StatusCodeValidation)?.acceptable == Set(200..<300))
        #expect(configuration.transport is URLSessionTransport)
        #expect(configuration.defaultHeaders == HTTPHeaders())
        #expect(configuration.adapters.isEmpty)
        #expect(configuration.authenticator == nil)
        #expect(configuration.credentialScope == .baseURL)
        #expect(configuration.redirects == .follow)
        #expect(configuration.retry == .never)
        #expect(configuration.timeLimit == .seconds(60))
        #expect(configuration.clock is ContinuousClock)
        #expect(configuration.redaction == .standard)
        #expect(configuration.logger is SilentLogger)
        #expect(configuration.activityDebounce == .milliseconds(300))

        // The shorthand with no arguments but the base URL makes the same configuration.
        let shorthand = NetworkSession(baseURL: "https://api.test/v1").configuration
        #expect((shorthand.baseURL as? String) == "https://api.test/v1")
        #expect(shorthand.transport is URLSessionTransport)
        #expect(shorthand.redirects == .follow && shorthand.retry == .never && shorthand.timeLimit == .seconds(60))
        #expect(shorthand.credentialScope == .baseURL && shorthand.redaction == .standard)
        #expect(shorthand.logger is SilentLogger && shorthand.clock is ContinuousClock)
        #expect(shorthand.activityDebounce == .milliseconds(300) && shorthand.authenticator == nil)
    }

    @Test func theShorthandInitializerKeepsEveryArgumentInTheConfiguration() {
        let transport = StubTransport()
        let clock = ManualClock()
        let logger = EventCollector()
        let retry = RetryPolicy(maximumAttempts: 4)
        let redaction = LogRedaction.standard.adding(queryItems: ["q"], headers: [])
        let scope = CredentialScope.baseURL(and: [URL(string: "https://cdn.test")!])
        let session = NetworkSession(
            baseURL: "https://api.test", validation: StatusCodeValidation(acceptable: [200]), transport: transport,
            defaultHeaders: ["X-App": "1"], adapters: [RequestAdapter { $0 }], authenticator: FixedToken(),
            credentialScope: scope, redirects: .never, retry: retry, timeLimit: .seconds(7), clock: clock,
            redaction: redaction, logger: logger, activityDebounce: .seconds(2))
        let configuration = session.configuration
        #expect((configuration.validation as? StatusCodeValidation)?.acceptable == [200])
        #expect((configuration.transport as? StubTransport) === transport)
        #expect(configuration.defaultHeaders == ["X-App": "1"])
        #expect(configuration.adapters.count == 1)
        #expect(configuration.authenticator is FixedToken)
        #expect(configuration.credentialScope == scope)
        #expect(configuration.redirects == .never)
        #expect(configuration.retry == retry)
        #expect(configuration.timeLimit == .seconds(7))
        #expect((configuration.clock as? ManualClock) === clock)
        #expect(configuration.redaction == redaction)
        #expect((configuration.logger as? EventCollector) === logger)
        #expect(configuration.activityDebounce == .seconds(2))
    }

    @Test func aSessionMadeFromAConfigurationSendsWithEveryPart() async throws {
        let transport = ScriptedTransport([
            .status(503),
            .respond { request in
                HTTPResponse(
                    statusCode: 200, headers: ["Content-Type": "application/json"],
                    body: request.httpBody ?? Data(), url: request.url)
            },
        ])
        let logger = EventCollector()
        var configuration = NetworkSession.Configuration(baseURL: "https://api.test/v2")
        configuration.transport = transport
        configuration.defaultHeaders = ["X-App": "notes"]
        configuration.encoder.keyEncodingStrategy = .convertToSnakeCase
        configuration.decoder.keyDecodingStrategy = .convertFromSnakeCase
        configuration.adapters = [
            RequestAdapter { request in
                var request = request
                request.setValue("yes", forHTTPHeaderField: "X-Adapted")
                return request
            }
        ]
        configuration.authenticator = FixedToken()
        configuration.retry = RetryPolicy(maximumAttempts: 2, initialDelay: .zero)
        configuration.redaction = LogRedaction.standard.adding(queryItems: ["q"], headers: [])
        configuration.logger = logger
        let session = NetworkSession(configuration: configuration)

        let endpoint = Endpoint(.put, "notes", query: ["q": "hidden"], body: .json(Note(noteTitle: "Hi")))
        let note: Note = try await session.send(endpoint)
        #expect(note == Note(noteTitle: "Hi"))
        #expect(transport.requestCount == 2)  // the 503, retried once
        let sent = try #require(transport.requests.last)
        #expect(sent.url?.absoluteString == "https://api.test/v2/notes?q=hidden")
        #expect(sent.value(forHTTPHeaderField: "X-App") == "notes")
        #expect(sent.value(forHTTPHeaderField: "X-Adapted") == "yes")
        #expect(sent.value(forHTTPHeaderField: "X-Token") == "secret")
        #expect(String(decoding: sent.httpBody ?? Data(), as: UTF8.self) == #"{"note_title":"Hi"}"#)
        #expect(
            logger.requestEvents.map(\.kind)
                == [.requestStarted, .requestFinished, .retry, .requestStarted, .requestFinished])
        for event in logger.requestEvents { #expect(event.url == "https://api.test/v2/notes?q=redacted") }
    }

    @Test func aConfigurationsValidationRedirectsAndTimeLimitApply() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/moved", status: 302, headers: ["Location": "https://api.test/there"])
        stub.stub(.get, "/created", status: 201, json: "{}")
        var configuration = NetworkSession.Configuration(baseURL: "https://api.test")
        configuration.transport = stub
        configuration.validation = StatusCodeValidation(acceptable: [200, 302])
        configuration.redirects = .never
        let session = NetworkSession(configuration: configuration)
        // Not followed: the 302 is the answer, and the validation accepts it.
        #expect(try await session.response(for: Endpoint(.get, "moved")).statusCode == 302)
        // A 2xx the validation does not list fails.
        await #expect(throws: NetworkError.httpStatus(code: 201, body: Data("{}".utf8))) {
            try await session.send(Endpoint(.get, "created"))
        }

        let held = ControlledTransport()
        let clock = ManualClock()
        var timed = NetworkSession.Configuration(baseURL: "https://api.test")
        timed.transport = held
        timed.clock = clock
        timed.timeLimit = .seconds(5)
        let limited = NetworkSession(configuration: timed)
        let call = Task { try await limited.data(for: Endpoint(.get, "slow")) }
        try await held.waitUntilHeld(0)
        try await clock.waitForSleepers { $0 == [.seconds(5)] }
        clock.advance(by: .seconds(5))
        await #expect(throws: NetworkError.timeout) { try await call.value }
        #expect(held.cancelledRequests == [0])
    }
}
