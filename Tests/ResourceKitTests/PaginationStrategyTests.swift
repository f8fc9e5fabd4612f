import Foundation
import ResourceKit
import TestSupport
import Testing

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
}
