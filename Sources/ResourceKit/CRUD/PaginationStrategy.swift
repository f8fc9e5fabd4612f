public import Foundation

/// What a strategy learns from a page to find the next one.
public struct PageContext: Sendable, Equatable {
    /// How many items the page held.
    public var itemCount: Int
    /// The number of items in the list, when known.
    public var totalItems: Int?
    /// The number of pages in the list, when known.
    public var totalPages: Int?
    /// The next-page token from the body, for cursor pagination.
    public var nextCursor: String?
    /// The response headers (for `Link`).
    public var headers: HTTPHeaders
    /// The URL the page was fetched from (for relative links).
    public var url: URL?

    /// Creates a context.
    /// - Parameters:
    ///   - itemCount: How many items the page held.
    ///   - totalItems: The number of items in the list.
    ///   - totalPages: The number of pages in the list.
    ///   - nextCursor: The next-page token.
    ///   - headers: The response headers.
    ///   - url: The page's URL.
    public init(
        itemCount: Int, totalItems: Int? = nil, totalPages: Int? = nil, nextCursor: String? = nil,
        headers: HTTPHeaders = HTTPHeaders(), url: URL? = nil
    ) {
        self.itemCount = itemCount
        self.totalItems = totalItems
        self.totalPages = totalPages
        self.nextCursor = nextCursor
        self.headers = headers
        self.url = url
    }
}

/// Finds the pages of a list: what to send for the first page, and, from each page, the key of the next.
///
/// A custom strategy is three small functions; see the built-in ones: ``PageNumberPagination``,
/// ``OffsetPagination``, ``CursorPagination`` and ``LinkHeaderPagination``.
public protocol PaginationStrategy: Sendable {
    /// What identifies a page: a number, an offset, a token, a URL.
    associatedtype PageKey: Sendable & Equatable
    /// The key of the first page.
    var firstPageKey: PageKey { get }
    /// Adds the key to the list endpoint.
    /// - Parameters:
    ///   - endpoint: The list endpoint, without paging parameters.
    ///   - key: The page key.
    /// - Returns: The endpoint of that page.
    func endpoint(_ endpoint: Endpoint, for key: PageKey) -> Endpoint
    /// The key of the page after `key`, or `nil` at the end of the list.
    /// - Parameters:
    ///   - key: The key of the page just loaded.
    ///   - context: What that page said.
    /// - Returns: The next key, or `nil`.
    func nextPageKey(after key: PageKey, context: PageContext) -> PageKey?
}

/// Page number and page size, as in `?page=2&perPage=50`.
///
/// The list ends at an empty page, at the last page when the server sends `totalPages` or `totalItems`,
/// or at a page shorter than the page size. With totals, loading N pages costs exactly N requests.
public struct PageNumberPagination: PaginationStrategy, Equatable {
    /// Items per page.
    public var pageSize: Int
    /// The query name of the page number.
    public var pageParameter: String
    /// The query name of the page size.
    public var pageSizeParameter: String
    /// The number of the first page.
    public var firstPage: Int

    /// Creates the strategy.
    /// - Parameters:
    ///   - pageSize: Items per page.
    ///   - pageParameter: The query name of the page number; `page` by default.
    ///   - pageSizeParameter: The query name of the page size; `perPage` by default (PocketBase).
    ///   - firstPage: The number of the first page; `1` by default.
    public init(
        pageSize: Int = 30, pageParameter: String = "page", pageSizeParameter: String = "perPage", firstPage: Int = 1
    ) {
        self.pageSize = max(1, pageSize)
        self.pageParameter = pageParameter
        self.pageSizeParameter = pageSizeParameter
        self.firstPage = firstPage
    }

    /// ``firstPage``.
    public var firstPageKey: Int { firstPage }

    /// Sets the page and page-size parameters.
    public func endpoint(_ endpoint: Endpoint, for key: Int) -> Endpoint {
        endpoint.setting(query: pageParameter, to: String(key)).setting(query: pageSizeParameter, to: String(pageSize))
    }

    /// The next page number, or `nil` at the end.
    public func nextPageKey(after key: Int, context: PageContext) -> Int? {
        // Overflow anywhere means no sensible next page: end the list instead of trapping.
        guard context.itemCount > 0 else { return nil }
        let (next, nextOverflow) = key.addingReportingOverflow(1)
        let (offset, offsetOverflow) = key.subtractingReportingOverflow(firstPage)
        let (loaded, loadedOverflow) = offset.addingReportingOverflow(1)
        guard !nextOverflow, !offsetOverflow, !loadedOverflow else { return nil }
        if let totalPages = context.totalPages { return loaded < totalPages ? next : nil }
        if let totalItems = context.totalItems {
            let (seen, seenOverflow) = loaded.multipliedReportingOverflow(by: pageSize)
            return !seenOverflow && seen < totalItems ? next : nil
        }
        return context.itemCount < pageSize ? nil : next
    }
}

/// Offset and limit, as in `?offset=100&limit=50`.
///
/// The next offset is the current one plus the number of items the server actually returned, so a server
/// that caps `limit` below the one asked for loses nothing. The list ends at an empty page, or when the next
/// offset reaches the total the server sends (`totalItems` in the body, or an `X-Total-Count` header): with a
/// total, a list whose size is a multiple of the limit needs no extra empty request. Without a total, a page
/// shorter than the limit ends the list, since nothing then tells a capped page from the last one.
public struct OffsetPagination: PaginationStrategy, Equatable {
    /// Items per page.
    public var limit: Int
    /// The query name of the offset.
    public var offsetParameter: String
    /// The query name of the limit.
    public var limitParameter: String

    /// Creates the strategy.
    /// - Parameters:
    ///   - limit: Items per page.
    ///   - offsetParameter: The query name of the offset; `offset` by default.
    ///   - limitParameter: The query name of the limit; `limit` by default.
    public init(limit: Int = 30, offsetParameter: String = "offset", limitParameter: String = "limit") {
        self.limit = max(1, limit)
        self.offsetParameter = offsetParameter
        self.limitParameter = limitParameter
    }

    /// Offset zero.
    public var firstPageKey: Int { 0 }

    /// Sets the offset and limit parameters.
    public func endpoint(_ endpoint: Endpoint, for key: Int) -> Endpoint {
        endpoint.setting(query: offsetParameter, to: String(key)).setting(query: limitParameter, to: String(limit))
    }

    /// The next offset, or `nil` at the end.
    public func nextPageKey(after key: Int, context: PageContext) -> Int? {
        guard context.itemCount > 0 else { return nil }
        let (next, overflow) = key.addingReportingOverflow(context.itemCount)
        guard !overflow else { return nil }
        if let totalItems = context.totalItems { return next < totalItems ? next : nil }
        return context.itemCount < limit ? nil : next
    }
}

/// A cursor or next-page token from the response body (``PageResponse/nextCursor``), as in `?cursor=abc`.
///
/// The list ends when the token is missing or empty, or at an empty page.
public struct CursorPagination: PaginationStrategy, Equatable {
    /// The query name of the cursor.
    public var cursorParameter: String
    /// The query name of the page size, if the API takes one.
    public var pageSizeParameter: String?
    /// Items per page, sent when ``pageSizeParameter`` is set.
    public var pageSize: Int

    /// Creates the strategy.
    /// - Parameters:
    ///   - cursorParameter: The query name of the cursor; `cursor` by default.
    ///   - pageSizeParameter: The query name of the page size; `limit` by default, `nil` to send none.
    ///   - pageSize: Items per page.
    public init(cursorParameter: String = "cursor", pageSizeParameter: String? = "limit", pageSize: Int = 30) {
        self.cursorParameter = cursorParameter
        self.pageSizeParameter = pageSizeParameter
        self.pageSize = max(1, pageSize)
    }

    /// No cursor: the first page.
    public var firstPageKey: String? { nil }

    /// Sets the cursor (when there is one) and the page size.
    public func endpoint(_ endpoint: Endpoint, for key: String?) -> Endpoint {
        var endpoint = endpoint
        if let key { endpoint = endpoint.setting(query: cursorParameter, to: key) }
        if let pageSizeParameter { endpoint = endpoint.setting(query: pageSizeParameter, to: String(pageSize)) }
        return endpoint
    }

    /// The body's next cursor, or `nil` at the end.
    public func nextPageKey(after key: String?, context: PageContext) -> String?? {
        guard context.itemCount > 0, let cursor = context.nextCursor, !cursor.isEmpty else { return nil }
        return .some(cursor)
    }
}

/// RFC 8288 `Link: <…>; rel="next"` headers, as GitHub and many others send.
///
/// The list ends at an empty page, or when the response has no `next` link. Relative links resolve against the
/// page's URL.
public struct LinkHeaderPagination: PaginationStrategy, Equatable {
    /// Creates the strategy.
    public init() {}

    /// No URL: the list endpoint itself.
    public var firstPageKey: URL? { nil }

    /// The `next` URL replaces the endpoint's URL; method and headers are kept.
    public func endpoint(_ endpoint: Endpoint, for key: URL?) -> Endpoint {
        guard let key else { return endpoint }
        var next = endpoint
        next.path = key.absoluteString
        next.queryItems = []
        return next
    }

    /// The `next` link, or `nil` for an empty page or one without it.
    public func nextPageKey(after key: URL?, context: PageContext) -> URL?? {
        // An empty page ends the list, as with the other strategies, whatever its links say.
        guard context.itemCount > 0, let header = context.headers["Link"] else { return nil }
        guard let next = LinkHeader.url(forRelation: "next", in: header, relativeTo: context.url) else { return nil }
        return .some(next)
    }
}
