import Foundation
import ResourceKitHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `URL` or `String` base URL is taken apart once per session; a provider that may change is asked on every
/// request. Both must build the same requests.
@Suite struct FixedBaseURLTests {
    static let bases = [
        "http://h", "http://h/", "http://h/api", "http://h/api/", "http://h/api//", "https://user:pw@h:8443/v1",
        "http://127.0.0.1:8090/api/collections", "http://h/a%20b/", "http://h/api?key=1", "http://h/api#top",
        "http://h/api?key=1#top", "http://[::1]:80/x",
    ]
    static let endpoints = [
        Endpoint(.get, "posts"), Endpoint(.get, "/posts"), Endpoint(.get, "//posts"), Endpoint(.get, ""),
        Endpoint(.get, "/"), Endpoint(.get, "posts/records").appending(id: "a?b#c"),
        Endpoint(.get, "posts").appending(id: "../admin"), Endpoint(.get, "posts/ü ö"), Endpoint(.get, "a%2Fb/%zz"),
        Endpoint(.get, "posts", query: ["sort": "-created", "q": "x&r=1"]),
        Endpoint(
            .get, "posts", queryItems: [URLQueryItem(name: "tag", value: "a"), URLQueryItem(name: "flag", value: nil)]),
        Endpoint(
            .post, "posts", headers: ["X-Trace": "1"], body: .data(Data("{}".utf8), contentType: "application/json")),
        Endpoint(.delete, "posts/1"), Endpoint(.get, "HTTPS://other.example/x", query: ["a": "b"]),
    ]

    @Test(arguments: bases)
    func fixedAndAskedBasesBuildTheSameRequests(base: String) async throws {
        let fixedString = NetworkSession(baseURL: base, defaultHeaders: ["X-Client": "kit"])
        let fixedURL = URL(string: base).map { NetworkSession(baseURL: $0, defaultHeaders: ["X-Client": "kit"]) }
        let asked = NetworkSession(
            baseURL: DynamicBaseURL {
                guard let url = URL(string: base) else { throw URLError(.badURL) }
                return url
            }, defaultHeaders: ["X-Client": "kit"])
        for endpoint in Self.endpoints {
            let expected = try await asked.makeURLRequest(for: endpoint)
            let fromString = try await fixedString.makeURLRequest(for: endpoint)
            #expect(fromString == expected, "\(base) + \(endpoint.path)")
            #expect(fromString.url?.absoluteString == expected.url?.absoluteString)
            #expect(fromString.allHTTPHeaderFields == expected.allHTTPHeaderFields)
            if let fixedURL {
                let fromURL = try await fixedURL.makeURLRequest(for: endpoint)
                #expect(fromURL == expected, "\(base) + \(endpoint.path)")
            }
        }
    }

    @Test func aFixedBaseFailsEveryRequestAsAnAskedOneDoes() async {
        for base in ["not a url", "/relative/only", "mailto:someone"] {
            let fixed = NetworkSession(baseURL: base)
            let asked = NetworkSession(baseURL: DynamicBaseURL { URL(string: base) ?? URL(fileURLWithPath: "/") })
            let fixedError = await #expect(throws: NetworkError.self) {
                try await fixed.makeURLRequest(for: Endpoint(.get, "posts"))
            }
            if URL(string: base) != nil {
                let askedError = await #expect(throws: NetworkError.self) {
                    try await asked.makeURLRequest(for: Endpoint(.get, "posts"))
                }
                #expect(fixedError == askedError, "\(base)")
            }
        }
    }

    @Test func anInvalidDefaultHeaderFailsEveryRequestItIsSentWith() async {
        let session = NetworkSession(baseURL: "http://h", defaultHeaders: ["X-Bad": "a\r\nb"])
        await #expect(throws: NetworkError.invalidRequest("the value of header 'X-Bad' contains CR, LF or NUL")) {
            try await session.makeURLRequest(for: Endpoint(.get, "posts"))
        }
        await #expect(throws: NetworkError.invalidRequest("the value of header 'X-Bad' contains CR, LF or NUL")) {
            try await session.makeURLRequest(for: Endpoint(.get, "posts", headers: ["X-Other": "1"]))
        }
        // An endpoint's own value replaces the bad default, as it always did.
        await #expect(throws: Never.self) {
            try await session.makeURLRequest(for: Endpoint(.get, "posts", headers: ["X-Bad": "fine"]))
        }
    }
}
