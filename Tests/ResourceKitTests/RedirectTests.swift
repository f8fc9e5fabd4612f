import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Redirects followed by the session, and credentials that stay on their origin.
@Suite(.timeLimit(.minutes(1))) struct RedirectTests {
    let post = Post(id: "1", title: "v")
    let token = BearerTokenAdapter(token: "secret")

    func session(
        _ transport: any HTTPTransport,
        adapters: [any RequestAdapting] = [],
        scope: CredentialScope = .baseURL,
        redirects: RedirectPolicy = .follow
    ) -> NetworkSession {
        NetworkSession(
            baseURL: "http://test.local/api", transport: transport, adapters: adapters, credentialScope: scope,
            redirects: redirects)
    }

    static func redirect(_ status: Int, to location: String) -> ScriptedTransport.Answer {
        .status(status, json: "", headers: ["Location": location])
    }

    @Test(arguments: [307, 308])
    func temporaryAndPermanentRedirectsRepeatTheRequestWithItsBody(status: Int) async throws {
        let transport = ScriptedTransport([Self.redirect(status, to: "/api/v2/posts"), .status(201, json: json(post))])
        let created: Post = try await session(transport).send(Endpoint(.post, "posts", body: .json(post)))
        #expect(created == post)
        let second = transport.requests[1]
        #expect(second.url?.absoluteString == "http://test.local/api/v2/posts")
        #expect(second.httpMethod == "POST")
        #expect(second.httpBody == transport.requests[0].httpBody)
        #expect(second.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test(arguments: [(303, "POST"), (303, "PUT"), (302, "POST"), (301, "POST")])
    func seeOtherAndAPostsFoundBecomeABodylessGet(status: Int, method: String) async throws {
        let transport = ScriptedTransport([Self.redirect(status, to: "status/9"), .status(200, json: json(post))])
        let _: Post = try await session(transport).send(
            Endpoint(HTTPMethod(rawValue: method), "posts/1", body: .json(post)))
        let second = transport.requests[1]
        #expect(second.url?.absoluteString == "http://test.local/api/posts/status/9")
        #expect(second.httpMethod == "GET")
        #expect(second.httpBody == nil)
        #expect(second.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test func aPutAnsweredWithFoundKeepsItsMethodAndBody() async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "/api/posts/2"), .status(204)])
        try await session(transport).send(Endpoint(.put, "posts/1", body: .json(post)))
        #expect(transport.requests[1].httpMethod == "PUT")
        #expect(transport.requests[1].httpBody == transport.requests[0].httpBody)
    }

    @Test func aRedirectToAnotherOriginDropsEveryCredential() async throws {
        let transport = ScriptedTransport([
            Self.redirect(302, to: "http://other.test/landing"), Self.redirect(302, to: "http://test.local/api/back"),
            .status(204),
        ])
        let endpoint = Endpoint(
            .get, "posts/1", headers: ["Cookie": "s=1", "Proxy-Authorization": "Basic eA==", "X-Trace": "t"])
        try await session(transport, adapters: [token]).send(endpoint)
        let headers = transport.requests.map { $0.allHTTPHeaderFields ?? [:] }
        #expect(headers[0]["Authorization"] == "Bearer secret")
        #expect(headers[0]["Cookie"] == "s=1")
        for name in ["Authorization", "Cookie", "Proxy-Authorization"] {
            #expect(headers[1][name] == nil, "\(name) reached another origin")
        }
        #expect(headers[1]["X-Trace"] == "t")
        // Back on the endpoint's origin, the hop gets what a direct request gets: the adapter's credential and
        // the endpoint's own headers.
        #expect(headers[2]["Authorization"] == "Bearer secret")
        #expect(headers[2]["Cookie"] == "s=1")
        #expect(headers[2]["Proxy-Authorization"] == "Basic eA==")
    }

    static let secretDefaults: HTTPHeaders = [
        "Cookie": "sid=1", "Proxy-Authorization": "Basic cHg=", "X-Client": "app",
    ]

    func sent(_ name: String, _ transport: ScriptedTransport) -> [String?] {
        transport.requests.map { $0.value(forHTTPHeaderField: name) }
    }

    @Test(arguments: [
        CredentialScope.baseURL(and: [URL(string: "https://cdn.other.test")!]), .anyOrigin,
    ])
    func defaultCredentialsReachATrustedOriginAfterARedirectAsWhenAskedDirectly(scope: CredentialScope) async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "https://cdn.other.test/x"), .status(204)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, defaultHeaders: Self.secretDefaults,
            adapters: [token], credentialScope: scope)
        try await session.send(Endpoint(.get, "posts/1"))
        try await session.send(Endpoint(.get, "https://cdn.other.test/x"))
        #expect(sent("Cookie", transport) == ["sid=1", "sid=1", "sid=1"])
        #expect(sent("Proxy-Authorization", transport) == ["Basic cHg=", "Basic cHg=", "Basic cHg="])
        #expect(sent("Authorization", transport) == ["Bearer secret", "Bearer secret", "Bearer secret"])
    }

    @Test func theBaseOriginGetsItsDefaultCredentialsBackAfterABounceThroughAnotherHost() async throws {
        let transport = ScriptedTransport([
            Self.redirect(302, to: "http://login.other.test/sso"), Self.redirect(302, to: "http://test.local/api/back"),
            .status(204),
        ])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, defaultHeaders: Self.secretDefaults,
            adapters: [token])
        try await session.send(Endpoint(.get, "posts/1"))
        #expect(transport.requests.map { $0.url?.host } == ["test.local", "login.other.test", "test.local"])
        #expect(sent("Cookie", transport) == ["sid=1", nil, "sid=1"])
        #expect(sent("Proxy-Authorization", transport) == ["Basic cHg=", nil, "Basic cHg="])
        #expect(sent("Authorization", transport) == ["Bearer secret", nil, "Bearer secret"])
        #expect(sent("X-Client", transport) == ["app", "app", "app"])
    }

    @Test func theEndpointsOwnCredentialsGoOnlyToItsOriginWhileTheSessionsFollowTheScope() async throws {
        let transport = ScriptedTransport([
            Self.redirect(307, to: "https://cdn.other.test/x"), Self.redirect(307, to: "http://test.local/api/y"),
            .status(204),
        ])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, defaultHeaders: ["Cookie": "sid=1"],
            credentialScope: .baseURL(and: [URL(string: "https://cdn.other.test")!]))
        try await session.send(Endpoint(.get, "posts/1", headers: ["Cookie": "mine=2", "Authorization": "Key k"]))
        // On the trusted CDN the endpoint's cookie is dropped and the session's applies, as it would directly.
        #expect(sent("Cookie", transport) == ["mine=2", "sid=1", "mine=2"])
        #expect(sent("Authorization", transport) == ["Key k", nil, "Key k"])
    }

    @Test(arguments: ["https://test.local/api/x", "http://test.local:8080/api/x"])
    func anotherSchemeOrPortIsAnotherOrigin(location: String) async throws {
        let transport = ScriptedTransport([Self.redirect(307, to: location), .status(204)])
        try await session(transport, adapters: [token]).send(Endpoint(.get, "posts/1", headers: ["Cookie": "s=1"]))
        #expect(transport.requests[1].value(forHTTPHeaderField: "Authorization") == nil)
        #expect(transport.requests[1].value(forHTTPHeaderField: "Cookie") == nil)
    }

    @Test func aRedirectOnTheSameOriginKeepsCredentials() async throws {
        let transport = ScriptedTransport([Self.redirect(301, to: "HTTP://TEST.LOCAL:80/api/moved"), .status(204)])
        try await session(transport, adapters: [token]).send(Endpoint(.get, "posts/1", headers: ["Cookie": "s=1"]))
        #expect(transport.requests[1].value(forHTTPHeaderField: "Authorization") == "Bearer secret")
        #expect(transport.requests[1].value(forHTTPHeaderField: "Cookie") == "s=1")
    }

    @Test func adaptersDoNotRunForAnAbsoluteURLOnAnotherOrigin() async throws {
        let transport = ScriptedTransport([.status(204)])
        try await session(transport, adapters: [token]).send(Endpoint(.get, "http://cdn.other.test/file"))
        #expect(transport.requests[0].value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func credentialsAmongTheDefaultHeadersStayInScopeToo() async throws {
        let transport = ScriptedTransport([.status(204)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            defaultHeaders: ["Authorization": "Token t", "cookie": "s=1", "X-Client": "app"])
        try await session.send(Endpoint(.get, "posts"))
        try await session.send(Endpoint(.get, "http://TEST.local:80/api/posts"))
        try await session.send(Endpoint(.get, "http://cdn.other.test/file"))
        func sent(_ name: String) -> [String?] { transport.requests.map { $0.value(forHTTPHeaderField: name) } }
        #expect(sent("Authorization") == ["Token t", "Token t", nil])
        #expect(sent("Cookie") == ["s=1", "s=1", nil])
        #expect(sent("X-Client") == ["app", "app", "app"])
        // What the endpoint sets itself is the caller's decision.
        try await session.send(Endpoint(.get, "http://cdn.other.test/file", headers: ["Authorization": "Key k"]))
        #expect(transport.requests[3].value(forHTTPHeaderField: "Authorization") == "Key k")
    }

    @Test func anAbsoluteNextLinkOnAnotherHostGetsNoCredentials() async throws {
        let transport = ScriptedTransport([
            .status(
                200, json: #"[{"id":"a","n":1}]"#,
                headers: ["Link": #"<http://cdn.other.test/api/items?page=2>; rel="next""#]),
            .status(200, json: #"[{"id":"b","n":2}]"#),
        ])
        let list = ListResource<RemoteLinkedItems>(session: session(transport, adapters: [token]), request: ())
        _ = try await list.loadFirstPage()
        let items = try await list.loadNextPage()
        #expect(items.map(\.id) == ["a", "b"])
        #expect(transport.requests[0].value(forHTTPHeaderField: "Authorization") == "Bearer secret")
        #expect(transport.requests[1].url?.host == "cdn.other.test")
        #expect(transport.requests[1].value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func aWiderScopeLetsCredentialsReachTheOriginsItNames() async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "https://cdn.other.test/x"), .status(204)])
        let scope = CredentialScope.baseURL(and: [URL(string: "https://cdn.other.test:443/")!])
        try await session(transport, adapters: [token], scope: scope).send(Endpoint(.get, "posts/1"))
        #expect(transport.requests[1].value(forHTTPHeaderField: "Authorization") == "Bearer secret")

        let anywhere = ScriptedTransport([.status(204)])
        try await session(anywhere, adapters: [token], scope: .anyOrigin).send(Endpoint(.get, "http://else.test/"))
        #expect(anywhere.requests[0].value(forHTTPHeaderField: "Authorization") == "Bearer secret")
    }

    @Test func moreHopsThanAllowedFailWithTooManyRedirects() async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "/api/loop")])
        let error = try #require(
            await #expect(throws: NetworkError.self) {
                try await session(transport, redirects: .follow(maximumHops: 3)).send(Endpoint(.get, "loop"))
            })
        guard let code = error.transportCode else {
            Issue.record("expected a transport error, got \(error)")
            return
        }
        #expect(code == .httpTooManyRedirects)
        #expect(transport.requestCount == 4)
    }

    @Test func withNoRedirectsTheRedirectReachesTheCallerWithItsLocation() async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "/api/elsewhere")])
        let error = try #require(
            await #expect(throws: NetworkError.self) {
                try await session(transport, redirects: .never).send(Endpoint(.get, "posts/1"))
            })
        #expect(error.statusCode == 302)
        #expect(error.headers?["Location"] == "/api/elsewhere")
        #expect(transport.requestCount == 1)

        var followed = Endpoint(.get, "posts/1")
        followed.redirects = .follow
        let again = ScriptedTransport([Self.redirect(302, to: "/api/elsewhere"), .status(204)])
        try await session(again, redirects: .never).send(followed)
        #expect(again.requestCount == 2)
    }

    /// `endpoint.redirects = .none` meant `nil` (the property is optional), so the session's policy applied;
    /// `.never` is the endpoint's own policy.
    @Test func anEndpointsNeverPolicyStopsFollowingRedirectsTheSessionFollows() async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: "/api/elsewhere"), .status(204)])
        var endpoint = Endpoint(.get, "posts/1")
        endpoint.redirects = .never
        #expect(endpoint.redirects == .follow(maximumHops: 0))
        await #expect(throws: NetworkError.httpStatus(code: 302, body: Data())) {
            try await session(transport, redirects: .follow).send(endpoint)
        }
        #expect(transport.requests.map { $0.url?.path } == ["/api/posts/1"])
    }

    @Test(arguments: ["ftp://files.test/x", "javascript:alert(1)", "http://"])
    func aLocationThatIsNotAnHTTPURLFailsClearly(location: String) async throws {
        let transport = ScriptedTransport([Self.redirect(302, to: location), .status(204)])
        let error = try #require(
            await #expect(throws: NetworkError.self) { try await session(transport).send(Endpoint(.get, "posts/1")) })
        guard error.code == .invalidResponse else {
            Issue.record("expected invalidResponse, got \(error)")
            return
        }
        let message = error.message
        #expect(message.contains(location))
        #expect(transport.requestCount == 1)
    }

    @Test func aRedirectWithoutLocationIsTheAnswer() async throws {
        let transport = ScriptedTransport([.status(302), .status(204)])
        await #expect(throws: NetworkError.httpStatus(code: 302, body: Data("{}".utf8))) {
            try await session(transport).send(Endpoint(.get, "posts/1"))
        }
        #expect(transport.requestCount == 1)
    }
}
