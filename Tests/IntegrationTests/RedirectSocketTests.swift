import Foundation
import ResourceKit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Redirects between two loopback servers, which are two origins (same host, other port): what reaches each
/// socket, and what the logs say about it.
@Suite(.timeLimit(.minutes(1))) struct RedirectSocketTests {
    static let secrets: HTTPHeaders = ["Cookie": "sid=1", "Proxy-Authorization": "Basic cHg=", "X-Client": "app"]

    /// `api` redirects `/start` to `login`, which redirects back to `api`'s `/back`.
    static func bounce() throws -> (api: RecordingServer, login: RecordingServer) {
        let ports = Locked<(api: UInt16, login: UInt16)>((0, 0))
        let api = try RecordingServer { request in
            request.path == "/start" ? .redirect(to: "http://127.0.0.1:\(ports.withLock { $0.login })/sso") : .ok
        }
        let login = try RecordingServer { _ in .redirect(to: "http://127.0.0.1:\(ports.withLock { $0.api })/back") }
        ports.withLock { $0 = (api.port, login.port) }
        return (api, login)
    }

    func session(_ api: RecordingServer, scope: CredentialScope = .baseURL) -> NetworkSession {
        NetworkSession(
            baseURL: "http://127.0.0.1:\(api.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            defaultHeaders: Self.secrets, adapters: [BearerTokenAdapter(token: "t")], credentialScope: scope)
    }

    @Test func theBaseOriginGetsItsCredentialsBackAfterABounceThroughAnotherOrigin() async throws {
        let (api, login) = try Self.bounce()
        defer {
            api.close()
            login.close()
        }
        try await session(api).send(Endpoint(.get, "start"))
        #expect(api.requests.map(\.path) == ["/start", "/back"])
        for request in api.requests {
            #expect(request.headers["Cookie"] == "sid=1")
            #expect(request.headers["Proxy-Authorization"] == "Basic cHg=")
            #expect(request.headers["Authorization"] == "Bearer t")
        }
        #expect(login.requests.map(\.path) == ["/sso"])
        let sso = try #require(login.requests.first)
        for name in ["Cookie", "Proxy-Authorization", "Authorization"] {
            #expect(sso.headers[name] == nil, "\(name) reached an origin out of scope")
        }
        #expect(sso.headers["X-Client"] == "app")
    }

    @Test func aTrustedOriginGetsTheSessionsCredentialsAfterARedirectAsWhenAskedDirectly() async throws {
        let (api, login) = try Self.bounce()
        defer {
            api.close()
            login.close()
        }
        let trusted = try #require(URL(string: "http://127.0.0.1:\(login.port)"))
        let session = session(api, scope: .baseURL(and: [trusted]))
        try await session.send(Endpoint(.get, "start"))
        try await session.send(Endpoint(.get, "http://127.0.0.1:\(login.port)/sso"))
        #expect(login.requests.count == 2)
        for request in login.requests {
            #expect(request.headers["Cookie"] == "sid=1")
            #expect(request.headers["Proxy-Authorization"] == "Basic cHg=")
            #expect(request.headers["Authorization"] == "Bearer t")
        }
    }

    @Test func theHeadersOfALoggedErrorAreRedacted() async throws {
        let location = "http://bob:pw@127.0.0.1:9/sso?access_token=t0k&next=%2Fhome"
        let api = try RecordingServer { _ in
            .redirect(
                to: location,
                headers: ["Set-Cookie": "sid=t0k", "Link": #"<http://127.0.0.1:9/p?token=t0k>; rel="next""#])
        }
        defer { api.close() }
        let logger = EventCollector()
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(api.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            redirects: .never,
            logger: logger)
        let thrown = try #require(
            await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "a")) })
        #expect(thrown.statusCode == 302)
        #expect(thrown.headers?["Location"] == location)

        let redacted = "http://redacted@127.0.0.1:9/sso?access_token=redacted&next=%2Fhome"
        let link = #"<http://127.0.0.1:9/p?token=redacted>; rel="next""#
        let logged = logger.events.compactMap { $0.kind == .requestFailed ? $0.error?.headers : nil }
        #expect(logged.count == 1)
        for headers in logged {
            #expect(headers["Location"] == redacted)
            #expect(headers["Link"] == link)
            #expect(headers["Set-Cookie"] == "<redacted>")
        }
        #expect(!logger.events.map(\.description).joined().contains("t0k"))
    }
}
