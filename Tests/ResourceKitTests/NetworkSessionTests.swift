import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct NetworkSessionTests {
    @Test(arguments: ["http://h/api", "http://h/api/", "http://h/api//"], ["posts", "/posts", "//posts"])
    func baseURLAndPathJoinWithOneSlash(base: String, path: String) async throws {
        let session = NetworkSession(baseURL: base, transport: StubTransport())
        let request = try await session.makeURLRequest(for: Endpoint(.get, path))
        #expect(request.url?.absoluteString == "http://h/api/posts")
    }

    @Test func stubsAndTheRequestLogUseOneDecodedPath() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/groups/a b", json: #"{"id":"a b","title":"spaced","body":""}"#)
        stub.stub(.get, "/api/groups/c%2Bd", json: #"{"id":"c+d","title":"plus","body":""}"#)
        let session = makeSession(stub)
        let spaced: Post = try await session.send(Endpoint(.get, "groups").appending(id: "a b"))
        #expect(spaced.title == "spaced")
        let plus: Post = try await session.send(Endpoint(.get, "groups").appending(id: "c+d"))
        #expect(plus.title == "plus")

        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([Post(id: "a b", title: "spaced")], into: "groups")
        _ = try await makeSession(backend).data(for: Endpoint(.get, "groups").appending(id: "a b"))
        #expect(backend.requestLog.last?.path == "/api/groups/a b")
    }

    @Test func emptyIDIsNeverSentToTheCollection() async throws {
        let stub = StubTransport()
        stub.stub(.delete, "/api/posts", status: 204)
        stub.stub(.get, "/api/posts", json: "[]")
        let session = makeSession(stub)
        let problem = NetworkError.invalidRequest("an empty id cannot be appended to 'posts'")
        await #expect(throws: problem) { try await session.send(Endpoint(.delete, "posts").appending(id: "")) }
        // A resource reading an empty id neither sends it nor shares the collection's request.
        let resource = Resource<RemotePost>(session: session)
        await #expect(throws: problem) { try await resource.read("") }
        #expect(stub.requestCount == 0)
    }

    @Test func repeatedQueryKeysAndATimeoutFromTheInitializer() async throws {
        let session = makeSession(StubTransport())
        let endpoint = Endpoint(
            .get, "posts", queryItems: [URLQueryItem(name: "tag", value: "a"), URLQueryItem(name: "tag", value: "b")],
            timeLimit: .seconds(7))
        let request = try await session.makeURLRequest(for: endpoint)
        #expect(request.url?.query == "tag=a&tag=b")
        #expect(request.timeoutInterval == 7)
        #expect(
            try await session.makeURLRequest(for: Endpoint(.get, "posts", timeLimit: .seconds(3))).timeoutInterval == 3)
    }

    @Test(arguments: ["../admin", "a?b#c", "..", "50%", "with space/and slash"])
    func idStaysInsideItsPathSegment(id: String) async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed([Post(id: id, title: "t")], into: "posts")
        let session = NetworkSession(baseURL: "http://h/api", transport: backend)
        let post: Post = try await session.send(Endpoint(.get, "posts").appending(id: id))
        #expect(post.id == id)
        let logged = try #require(backend.requestLog.last)
        #expect(logged.path == "/api/posts/" + id)
        let request = try await session.makeURLRequest(for: Endpoint(.get, "posts").appending(id: id))
        #expect(request.url?.query == nil)
        #expect(request.url?.fragment == nil)
    }

    @Test func queryValuesArriveIntact() async throws {
        let backend = InMemoryBackend()
        let session = NetworkSession(baseURL: "http://h", transport: backend)
        let values = ["q": "a b&c=d+e", "name": "Zoë 東京 ✓", "plus": "+"]
        _ = try? await session.send(Endpoint(.get, "search", query: values))
        #expect(backend.requestLog.first?.query == values)
    }

    @Test func explicitContentTypeIsNeverOverwritten() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/xml", status: 204)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: stub, defaultHeaders: ["content-type": "application/json"])
        let xml = Data("<post/>".utf8)
        try await session.send(
            Endpoint(
                .post, "xml", headers: ["Content-Type": "application/xml"], body: .data(xml, contentType: "text/plain"))
        )
        let request = try #require(stub.requests.first)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/xml")
        #expect(request.httpBody == xml)
    }

    @Test func requestHeaderBeatsSessionDefaultCaseInsensitively() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/x", status: 204)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: stub,
            defaultHeaders: ["X-Client": "default", "Accept": "text/plain"])
        try await session.send(Endpoint(.get, "x", headers: ["x-client": "request"]))
        let request = try #require(stub.requests.first)
        #expect(request.value(forHTTPHeaderField: "X-Client") == "request")
        #expect(request.value(forHTTPHeaderField: "Accept") == "text/plain")
    }

    @Test func customValidationCanAcceptA404() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", status: 404, json: json(Post(id: "1", title: "gone")))
        let session = NetworkSession(
            baseURL: "http://test.local/api", validation: StatusCodeValidation(acceptable: [200, 404]), transport: stub)
        let post: Post = try await session.send(Endpoint(.get, "posts/1"))
        #expect(post.title == "gone")
    }

    @Test func customValidationCanRejectA2xxBody() async throws {
        struct Envelope: Decodable { var ok: Bool }
        let stub = StubTransport()
        stub.stub(.get, "/api/x", json: #"{"ok":false}"#)
        let validation = ValidationClosure { response throws(NetworkError) in
            if (try? JSONDecoder().decode(Envelope.self, from: response.body))?.ok == false {
                throw .server(ServerError(status: response.statusCode, message: "not ok", body: response.body))
            }
        }
        let session = NetworkSession(baseURL: "http://test.local/api", validation: validation, transport: stub)
        await #expect(
            throws: NetworkError.server(ServerError(status: 200, message: "not ok", body: Data(#"{"ok":false}"#.utf8)))
        ) {
            try await session.send(Endpoint(.get, "x"))
        }
    }

    @Test func emptyBodiesDecodeToVoidNilAndEmptyResponse() async throws {
        let stub = StubTransport()
        stub.stub(.delete, "/api/posts/1", status: 204)
        stub.stub(.get, "/api/empty", status: 200)
        stub.stub(.head, "/api/posts", status: 200, headers: ["X-Total-Count": "3"])
        let session = makeSession(stub)
        try await session.send(Endpoint(.delete, "posts/1"))
        let none: Post? = try await session.send(Endpoint(.get, "empty"))
        #expect(none == nil)
        // Every optional, `Data?` included: an empty body is no data, not empty data.
        let noData: Data? = try await session.send(Endpoint(.get, "empty"))
        #expect(noData == nil)
        let rawEmpty: Data = try await session.send(Endpoint(.get, "empty"))
        #expect(rawEmpty == Data())
        let empty: EmptyResponse = try await session.send(Endpoint(.delete, "posts/1"))
        #expect(empty == EmptyResponse())
        let head = try await session.response(for: Endpoint(.head, "posts"))
        #expect(head.headers["x-total-count"] == "3")
        await #expect(
            throws: NetworkError.decoding(type: "Post", codingPath: "", message: "the response body is empty")
        ) {
            let _: Post = try await session.send(Endpoint(.get, "empty"))
        }
    }

    @Test func malformedBodyNamesTheCodingPath() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts", json: #"[{"id":"1","title":"a","body":""},{"id":"2","title":7,"body":""}]"#)
        let session = makeSession(stub)
        let error = await #expect(throws: NetworkError.self) {
            let _: [Post] = try await session.send(Endpoint(.get, "posts"))
        }
        guard let path = error?.decodingFailure?.codingPath else { Issue.record("expected .decoding"); return }
        #expect(path == "[1].title")
    }

    @Test func dynamicBaseURLSendsToTwoHosts() async throws {
        let host = Locked("one.test")
        let stub = StubTransport()
        stub.stub(.get, "/api/a", status: 204)
        let session = NetworkSession(
            baseURL: DynamicBaseURL { () throws(NetworkError) -> URL in
                try await "http://\(host.withLock { $0 })/api".resolveBaseURL()
            }, transport: stub)
        try await session.send(Endpoint(.get, "a"))
        host.withLock { $0 = "two.test" }
        try await session.send(Endpoint(.get, "a"))
        #expect(stub.requests.map { $0.url?.host } == ["one.test", "two.test"])
    }

    @Test(arguments: ["not a url", "", "/relative/only", "mailto"])
    func badBaseURLIsInvalidURL(base: String) async throws {
        let session = NetworkSession(baseURL: base, transport: StubTransport())
        let error = await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "x")) }
        guard error?.code == .invalidURL else {
            Issue.record("expected .invalidURL, got \(String(describing: error))"); return
        }
    }

    @Test func absolutePathBypassesBaseURL() async throws {
        let session = makeSession(StubTransport())
        let request = try await session.makeURLRequest(
            for: Endpoint(.get, "https://other.test/x?y=1", query: ["z": "2"]))
        #expect(request.url?.absoluteString == "https://other.test/x?y=1&z=2")
    }

    @Test func cancellingTheCallerCancelsTheTransport() async throws {
        let stub = StubTransport()
        // Held until cancelled: no delay that a slow machine could outlast.
        stub.stub(.get, "/api/slow", status: 204, heldBy: AsyncLatch())
        let session = makeSession(stub)
        let task = Task { try await session.send(Endpoint(.get, "slow")) }
        try await stub.waitForRequests(1, timeout: .seconds(30))
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(stub.cancellationCount == 1)
    }

    @Test func errorsMapToNetworkError() {
        #expect(NetworkError(CancellationError()) == .cancelled)
        #expect(NetworkError(URLError(.cancelled)) == .cancelled)
        #expect(NetworkError(URLError(.timedOut)) == .timeout)
        guard let code = NetworkError(URLError(.cannotConnectToHost)).transportCode else {
            Issue.record("expected .transport")
            return
        }
        #expect(code == .cannotConnectToHost)
    }

    @Test func formBodyIsEncoded() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/login", status: 204)
        try await makeSession(stub).send(
            Endpoint(
                .post, "login",
                body: .form([URLQueryItem(name: "user", value: "a b"), URLQueryItem(name: "pw", value: "x&y=+")])))
        let request = try #require(stub.requests.first)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(String(decoding: request.httpBody ?? Data(), as: UTF8.self) == "user=a%20b&pw=x%26y%3D%2B")
    }

    @Test func stubsAnswerByMethodAndPathAndRecordRequests() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/a", json: #"{"id":"1","title":"a","body":""}"#)
        stub.stub(.post, "/api/a", error: .timeout)
        let session = makeSession(stub)
        let post: Post = try await session.send(Endpoint(.get, "a", query: ["q": "1"]))
        #expect(post.id == "1")
        await #expect(throws: NetworkError.timeout) { try await session.send(Endpoint(.post, "a")) }
        #expect(
            stub.requests.map { "\($0.httpMethod ?? "") \($0.url?.absoluteString ?? "")" } == [
                "GET http://test.local/api/a?q=1", "POST http://test.local/api/a",
            ])
    }

    @Test func unstubbedRequestNamesTheRequest() async throws {
        let session = makeSession(StubTransport())
        let error = await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "missing")) }
        #expect(error?.description.contains("GET http://test.local/api/missing") == true)
    }
}
