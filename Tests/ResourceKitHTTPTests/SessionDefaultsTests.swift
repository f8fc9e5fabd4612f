import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Log redaction, the default `User-Agent` and the transport's cookie defaults.
@Suite struct SessionDefaultsTests {
    @Test func urlsInLogsLoseUserInfoAndSecretQueryValues() {
        let url = URL(string: "https://ann:pa55@api.test/v1/posts?token=abc&page=2&API_KEY=k&tag=a%26b&Signature=s")
        #expect(
            LogRedaction.standard.redact(url)
                == "https://redacted@api.test/v1/posts?token=redacted&page=2&API_KEY=redacted&tag=a%26b&Signature=redacted"
        )
        #expect(LogRedaction.standard.redact(URL(string: "http://api.test/a?b=1")) == "http://api.test/a?b=1")
        #expect(LogRedaction.standard.redact(URL(string: "http://ann@api.test/")) == "http://redacted@api.test/")
        #expect(LogRedaction.standard.redact(nil) == "")
    }

    @Test func redactionIsExtendable() {
        let redaction = LogRedaction.standard.adding(queryItems: ["Session"], headers: ["X-Api-Key"])
        #expect(
            redaction.redact(URL(string: "http://api.test/?session=1&q=x")) == "http://api.test/?session=redacted&q=x")
        let headers = redaction.redact(["x-api-key": "k", "Authorization": "Bearer t", "Accept": "*/*"])
        #expect(headers["X-API-KEY"] == "<redacted>")
        #expect(headers["authorization"] == "<redacted>")
        #expect(headers["Accept"] == "*/*")
        // User info is hidden whatever the lists say.
        #expect(
            LogRedaction(headers: [], queryItems: []).redact(URL(string: "http://u:p@a.test/?token=1"))
                == "http://redacted@a.test/?token=1")
    }

    @Test func everyLogEventCarriesTheRedactedURL() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts", status: 503, json: "{}")
        let logger = EventCollector()
        let session = NetworkSession(
            baseURL: "http://ann:pw@test.local/api", transport: stub, adapters: [BearerTokenAdapter(token: "t")],
            logger: logger)
        await #expect(throws: NetworkError.self) {
            try await session.send(Endpoint(.get, "posts", query: ["access_token": "x1", "page": "2"]))
        }
        let expected = "http://redacted@test.local/api/posts?access_token=redacted&page=2"
        #expect(logger.events.map(\.kind) == [.requestStarted, .requestFinished, .requestFailed])
        for event in logger.events { #expect(event.url == expected) }
        #expect(!logger.events.map(\.description).joined().contains("x1"))
        #expect(!logger.events.map(\.description).joined().contains("pw"))
    }

    @Test func requestsNameResourceKitAsTheirUserAgentUnlessTheyNameAnother() async throws {
        let session = makeSession(StubTransport())
        let plain = try await session.makeURLRequest(for: Endpoint(.get, "posts"))
        #expect(plain.value(forHTTPHeaderField: "User-Agent") == "ResourceKit/\(NetworkSession.libraryVersion)")
        #expect(NetworkSession.defaultUserAgent.hasPrefix("ResourceKit/"))

        let custom = try await session.makeURLRequest(for: Endpoint(.get, "posts", headers: ["user-agent": "App/1"]))
        #expect(custom.value(forHTTPHeaderField: "User-Agent") == "App/1")

        let defaults = NetworkSession(
            baseURL: "http://test.local", transport: StubTransport(), defaultHeaders: ["User-Agent": "Service/2"])
        let fromSession = try await defaults.makeURLRequest(for: Endpoint(.get, "posts"))
        #expect(fromSession.value(forHTTPHeaderField: "User-Agent") == "Service/2")
    }

    @Test func theTransportKeepsNoCookiesUnlessGivenAStore() {
        for transport in [URLSessionTransport(), URLSessionTransport(configuration: .ephemeral)] {
            let configuration = transport.session.configuration
            #expect(configuration.httpCookieStorage == nil)
            #expect(configuration.httpShouldSetCookies == false)
            #expect(configuration.httpCookieAcceptPolicy == .never)
        }
        let store = HTTPCookieStorage.shared
        let keeping = URLSessionTransport(cookieStorage: store).session.configuration
        #expect(keeping.httpCookieStorage === store)
        #expect(keeping.httpShouldSetCookies)
        #expect(
            URLSessionTransport(configuration: .default, cookieStorage: store).session.configuration
                .httpShouldSetCookies)
    }
}
