import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How `StubTransport` picks a stub: method, decoded path, and the query when a stub names one.
@Suite(.timeLimit(.minutes(1))) struct StubTransportTests {
    let stub = StubTransport()

    /// The body of the answer to `GET url`, as text.
    func body(_ url: String) async throws -> String {
        let response = try await stub.send(URLRequest(url: try #require(URL(string: url))))
        return String(decoding: response.body, as: UTF8.self)
    }

    @Test func aStubWithAQueryAnswersOnlyThatQuery() async throws {
        stub.stub(.get, "/posts?page=1", json: "[1]")
        stub.stub(.get, "/posts?page=2", json: "[2]")
        #expect(try await body("http://x.test/posts?page=1") == "[1]")
        #expect(try await body("http://x.test/posts?page=2") == "[2]")
        await #expect(throws: NetworkError.self) { try await body("http://x.test/posts?page=3") }
        await #expect(throws: NetworkError.self) { try await body("http://x.test/posts") }
    }

    @Test func queryItemsMatchInAnyOrderButAllOfThem() async throws {
        stub.stub(.get, "/posts?perPage=20&page=2&tag=a&tag=b", json: "[2]")
        #expect(try await body("http://x.test/posts?tag=b&page=2&tag=a&perPage=20") == "[2]")
        for other in ["page=2&perPage=20", "page=2&perPage=20&tag=a&tag=b&extra=1", "page=2&perPage=20&tag=a&tag=a"] {
            await #expect(throws: NetworkError.self) { try await body("http://x.test/posts?" + other) }
        }
    }

    @Test func queriesAreComparedDecoded() async throws {
        stub.stub(.get, "/search?q=a b&flag", json: "[1]")
        stub.stub(.get, "/search?q=c%26d", json: "[2]")
        #expect(try await body("http://x.test/search?flag&q=a%20b") == "[1]")
        #expect(try await body("http://x.test/search?q=c%26d") == "[2]")
        // `flag` has no value, which is not the empty value.
        await #expect(throws: NetworkError.self) { try await body("http://x.test/search?q=a%20b&flag=") }
    }

    @Test func aStubWithoutAQueryAnswersAnyQuery() async throws {
        stub.stub(.get, "/posts", json: "[0]")
        #expect(try await body("http://x.test/posts") == "[0]")
        #expect(try await body("http://x.test/posts?page=9") == "[0]")
    }

    @Test func aStubThatNamesTheQueryWinsWhicheverCameFirst() async throws {
        stub.stub(.get, "/posts?page=2", json: "[2]")
        stub.stub(.get, "/posts", json: "[0]")
        stub.stub(.get, "/feed", json: "[0]")
        stub.stub(.get, "/feed?page=2", json: "[2]")
        for path in ["/posts", "/feed"] {
            #expect(try await body("http://x.test\(path)?page=2") == "[2]")
            #expect(try await body("http://x.test\(path)?page=3") == "[0]")
        }
    }

    @Test func aStubReplacesOnlyTheStubForItsOwnQuery() async throws {
        stub.stub(.get, "/posts", json: "[0]")
        stub.stub(.get, "/posts?page=2", json: "[2]")
        stub.stub(.get, "/posts?page=2", json: "[22]")
        #expect(try await body("http://x.test/posts?page=2") == "[22]")
        #expect(try await body("http://x.test/posts?page=1") == "[0]")
    }

    @Test func aBareQuestionMarkNamesTheEmptyQuery() async throws {
        stub.stub(.get, "/posts?", json: "[0]")
        #expect(try await body("http://x.test/posts") == "[0]")
        await #expect(throws: NetworkError.self) { try await body("http://x.test/posts?page=1") }
    }

    @Test func anUnmatchedRequestsErrorNamesItsQueryAndTheStubbedOnes() async throws {
        stub.stub(.get, "/posts?page=1", json: "[1]")
        stub.stub(.get, "/posts?", json: "[0]")
        await #expect(
            throws: NetworkError.transport(
                code: .unsupportedURL,
                message: "StubTransport has no stub for GET http://x.test/posts?page=3&q=a%20b"
                    + " (path /posts, query page=3&q=a b); GET /posts is stubbed only for ?page=1, ?")
        ) { try await body("http://x.test/posts?page=3&q=a%20b") }
        await #expect(
            throws: NetworkError.transport(
                code: .unsupportedURL,
                message: "StubTransport has no stub for GET http://x.test/other (path /other, no query)")
        ) { try await body("http://x.test/other") }
    }

    @Test func aSessionsQueryReachesAStubThatNamesIt() async throws {
        stub.stub(.get, "/api/posts?page=2&perPage=20", json: #"{"id":"2","title":"two"}"#)
        let session = NetworkSession(baseURL: "http://x.test/api", transport: stub)
        let note: Note = try await session.send(Endpoint(.get, "posts", query: ["perPage": "20", "page": "2"]))
        #expect(note == Note(id: "2", title: "two"))
    }
}

/// `StubTransport.waitForRequests(_:timeout:)` ends when the requests arrive, and fails instead of hanging.
@Suite(.timeLimit(.minutes(1))) struct StubTransportWaitTests {
    let stub = StubTransport()

    init() {
        stub.stub(.get, "/posts", json: "[]")
    }

    func get(_ path: String = "/posts") async throws {
        _ = try await stub.send(URLRequest(url: try #require(URL(string: "http://x.test" + path))))
    }

    @Test func aWaitEndsWhenTheRequestsArrive() async throws {
        let waiter = Task { [stub] in try await stub.waitForRequests(2, timeout: .seconds(30)) }
        try await get()
        try await get()
        try await waiter.value
        try await stub.waitForRequests(2, timeout: .seconds(30))
    }

    @Test func waitingForMoreRequestsThanArriveFailsWithThoseThatArrived() async throws {
        try await get()
        await #expect(throws: NetworkError.self) { try await get("/missing") }
        let expected = WaitTimeout(
            awaited: "3 request(s)", reason: .timedOut, timeout: .milliseconds(50),
            seen: ["GET http://x.test/posts", "GET http://x.test/missing"])
        await #expect(throws: expected) { try await stub.waitForRequests(3, timeout: .milliseconds(50)) }
        #expect(
            expected.description
                == "Timed out after 0.05 seconds waiting for 3 request(s); saw 2: "
                + "[GET http://x.test/posts, GET http://x.test/missing]")
    }

    @Test func aCancelledWaitFailsAtOnceWithTheRequestsThatArrived() async throws {
        let waiter = Task { [stub] in try await stub.waitForRequests(1, timeout: .seconds(3600)) }
        waiter.cancel()
        let expected = WaitTimeout(awaited: "1 request(s)", reason: .cancelled, timeout: .seconds(3600), seen: [])
        await #expect(throws: expected) { try await waiter.value }
        #expect(expected.description == "Cancelled while waiting for 1 request(s); saw 0: []")
    }

    @Test func aWaitThatNamesNoTimeoutIsTheTimedOneWithFiveSeconds() async throws {
        // The wait without a timeout returns when cancelled; the timed one fails, naming its timeout.
        let waiter = Task { [stub] in try await stub.waitForRequests(1) }
        waiter.cancel()
        await #expect(
            throws: WaitTimeout(awaited: "1 request(s)", reason: .cancelled, timeout: .seconds(5), seen: [])
        ) { try await waiter.value }
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aTimeoutThatIsNotPositiveFailsAtOnceUnlessTheRequestsAreThere(timeout: Duration) async throws {
        await #expect(throws: WaitTimeout(awaited: "1 request(s)", reason: .timedOut, timeout: timeout, seen: [])) {
            try await stub.waitForRequests(1, timeout: timeout)
        }
        try await get()
        try await stub.waitForRequests(1, timeout: timeout)
    }

    @Test func aHugeTimeoutNeitherTrapsNorOutlivesTheWait() async throws {
        let waiter = Task { [stub] in try await stub.waitForRequests(1, timeout: .seconds(Int64.max)) }
        try await get()
        try await waiter.value
    }
}
