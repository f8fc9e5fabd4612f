import Foundation
import ResourceKit
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Pagination strategies and what they learn from a page are values that a test of a custom strategy compares.
@Suite(.offThePool) struct PaginationStrategyTests {
    @Test func pageContextsCompareByEveryField() throws {
        let url = try #require(URL(string: "http://test.local/api/posts?page=2"))
        let context = PageContext(itemCount: 20, totalItems: 45, headers: ["Link": "<p3>; rel=next"], url: url)
        #expect(context == PageContext(itemCount: 20, totalItems: 45, headers: ["link": "<p3>; rel=next"], url: url))
        #expect(context != PageContext(itemCount: 20, totalItems: 46, headers: ["Link": "<p3>; rel=next"], url: url))
        #expect(context != PageContext(itemCount: 20, totalItems: 45, url: url))
        #expect(PageContext(itemCount: 1, nextCursor: "a") != PageContext(itemCount: 1, nextCursor: "b"))
    }

    @Test func strategiesCompareByTheirSettings() {
        #expect(PageNumberPagination(pageSize: 50) == PageNumberPagination(pageSize: 50))
        #expect(PageNumberPagination(pageSize: 50) != PageNumberPagination(pageSize: 20))
        #expect(OffsetPagination(limit: 10) == OffsetPagination(limit: 10))
        #expect(OffsetPagination(limit: 10) != OffsetPagination(limit: 10, offsetParameter: "skip"))
        #expect(CursorPagination(pageSizeParameter: nil) != CursorPagination())
        #expect(LinkHeaderPagination() == LinkHeaderPagination())
    }

    /// Every built-in strategy ends the list at an empty page, as the Pagination article says: a `Link` header
    /// that still names a next page does not keep an empty one going.
    @Test func anEmptyPageEndsTheListWhateverItsLinksSay() throws {
        let link = try #require(URL(string: "https://api.test/items?page=2"))
        let headers: HTTPHeaders = ["Link": "<\(link.absoluteString)>; rel=\"next\""]
        let strategy = LinkHeaderPagination()
        #expect(strategy.nextPageKey(after: nil, context: PageContext(itemCount: 0, headers: headers)) == nil)
        #expect(strategy.nextPageKey(after: nil, context: PageContext(itemCount: 1, headers: headers)) == .some(link))
        #expect(PageNumberPagination(pageSize: 10).nextPageKey(after: 1, context: PageContext(itemCount: 0)) == nil)
        #expect(OffsetPagination(limit: 10).nextPageKey(after: 0, context: PageContext(itemCount: 0)) == nil)
        #expect(
            CursorPagination().nextPageKey(after: nil, context: PageContext(itemCount: 0, nextCursor: "c")) == nil)
    }

    /// A page whose `next` link is its own URL is the last page: the list ends there, with no error and no
    /// request more (a cycle through an earlier page is `invalidResponse`, tested with the list).
    @Test func aPageThatNamesItselfAsTheNextEndsTheList() async throws {
        let second = "http://test.local/api/items?page=2"
        func page(_ items: [Item]) throws -> ScriptedTransport.Answer {
            let body = try JSONEncoder().encode(items)
            return .respond { request throws(NetworkError) in
                HTTPResponse(
                    statusCode: 200, headers: ["Link": "<\(second)>; rel=\"next\""], body: body, url: request.url)
            }
        }
        let transport = ScriptedTransport([try page([Item(id: "1", n: 1)]), try page([Item(id: "2", n: 2)])])
        let list = ListResource<RemoteLinkedItems>(session: makeSession(transport))
        try await list.loadFirstPage()
        try await list.loadNextPage()
        #expect(list.items.map(\.id) == ["1", "2"])
        #expect(list.listState.pagination.hasMore == false)
        #expect(list.listState.pagination.nextPageError == nil)
        try await list.loadNextPage()
        #expect(transport.requestCount == 2)
    }
}
