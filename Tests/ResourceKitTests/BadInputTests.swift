import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Bad input must come back as a `NetworkError` or a valid request — never a trap.
@Suite(.timeLimit(.minutes(1))) struct BadInputTests {
    static let nasty: [String] = [
        "", "/", "//", "%", "%%", "%zz", "%4", "100%", "a%2", "..", ".", "../../etc/passwd", "?", "#", "?#&=+",
        " ", "\t\n", "\u{0}", "\u{FFFD}", "😀/🎉", "a\\b", "[::1]", "http://", "https:///x", "http://[bad", "://x",
        "é/ü?ß#", String(repeating: "a/", count: 2000), "%E9", "%C3%A9", "\u{202E}rtl", "a b/c d",
    ]

    @Test(arguments: nasty)
    func anyPathBuildsARequestOrThrowsInvalidURL(path: String) async {
        let session = NetworkSession(baseURL: "http://h/api", transport: StubTransport())
        do {
            let request = try await session.makeURLRequest(for: Endpoint(.get, path, query: [path: path]))
            #expect(request.url != nil)
        } catch {
            guard error.code == .invalidURL else {
                Issue.record("\(path.debugDescription) gave \(error)")
                return
            }
        }
    }

    @Test(arguments: nasty)
    func anyIDStaysOneSegment(id: String) async throws {
        let session = NetworkSession(baseURL: "http://h/api", transport: StubTransport())
        guard !id.isEmpty else {
            // An empty id would address the collection: it is refused instead.
            await #expect(throws: NetworkError.invalidRequest("an empty id cannot be appended to 'posts'")) {
                try await session.makeURLRequest(for: Endpoint(.get, "posts").appending(id: id))
            }
            return
        }
        let request = try await session.makeURLRequest(for: Endpoint(.get, "posts").appending(id: id))
        let path = try #require(
            request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) }?.percentEncodedPath)
        #expect(path.hasPrefix("/api/posts/"))
        #expect(!path.dropFirst("/api/posts/".count).contains("/"))
        #expect(request.url?.query == nil && request.url?.fragment == nil)
    }

    @Test(arguments: nasty)
    func anyBaseURLStringResolvesOrThrowsInvalidURL(base: String) async {
        do {
            let url = try await base.resolveBaseURL()
            #expect(url.host != nil)
        } catch {
            guard error.code == .invalidURL else {
                Issue.record("\(base.debugDescription) gave \(error)")
                return
            }
        }
    }

    @Test(arguments: nasty)
    func anyLinkHeaderParsesWithoutTrapping(header: String) {
        let links = LinkHeader.parse(header + "; rel=next, <" + header + ">; rel=\"next\"")
        for link in links { #expect(!link.target.isEmpty) }
        _ = LinkHeader.url(forRelation: "next", in: header, relativeTo: URL(string: "http://h/x"))
    }

    @Test(arguments: [
        "", "null", "[]", "{}", "{\"items\":null}", "{\"items\":[1,2]}", "\u{0}", "[[[[[", "{\"page\":\"x\"}",
    ])
    func malformedPagesAreDecodingErrors(body: String) async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/items", body: Data(body.utf8))
        let session = NetworkSession(baseURL: "http://h/api", transport: stub)
        let list = ListResource<RemotePagedItems>(session: session, request: ())
        let error = await #expect(throws: NetworkError.self) { try await list.loadFirstPage() }
        guard error?.code == .decoding else {
            Issue.record("\(body.debugDescription) gave \(String(describing: error))"); return
        }
        #expect(list.state == .failure(try #require(error), previous: nil))
    }

    @Test func strategiesClampNonsenseSizes() {
        #expect(PageNumberPagination(pageSize: 0).pageSize == 1)
        #expect(OffsetPagination(limit: -5).limit == 1)
        #expect(CursorPagination(pageSize: Int.min).pageSize == 1)
        let pages = PageNumberPagination(pageSize: 10)
        #expect(pages.nextPageKey(after: 1, context: PageContext(itemCount: 10, totalPages: -1)) == nil)
        #expect(pages.nextPageKey(after: Int.max - 1, context: PageContext(itemCount: 10, totalItems: 5)) == nil)
        #expect(pages.nextPageKey(after: Int.max, context: PageContext(itemCount: 10)) == nil)
        #expect(
            PageNumberPagination(firstPage: Int.min).nextPageKey(after: Int.max, context: PageContext(itemCount: 1))
                == nil)
        #expect(OffsetPagination(limit: 10).nextPageKey(after: Int.max - 3, context: PageContext(itemCount: 10)) == nil)
    }
}
