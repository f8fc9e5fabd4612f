/// One page of a list, as delivered by a ``PageSequence``.
public struct Page<Item: Sendable>: Sendable {
    /// The items on this page.
    public var items: [Item]
    /// The page's position in the sequence, starting at 1.
    public var number: Int
    /// The number of items in the list, when the server says.
    public var totalItems: Int?
    /// The number of pages in the list, when the server says.
    public var totalPages: Int?
    /// Whether another page follows.
    public var hasMore: Bool
}

extension Page: Equatable where Item: Equatable {}

/// The result of fetching one page, before it is merged anywhere.
// `@usableFromInline`: a case of `ListOutcome`, which `MachineHost`'s inlinable core names; API surface.
@usableFromInline struct FetchedPage<Item: Sendable, Key: Sendable>: Sendable {
    // `@usableFromInline`: a list's page path is inlinable (ListResource+Operations.swift); part of the API surface.
    @usableFromInline var items: [Item]
    @usableFromInline var nextKey: Key?
    @usableFromInline var context: PageContext
}

extension NetworkSession {
    /// Fetches the page with `key` and asks the strategy for the next key.
    nonisolated func fetchPage<Response: PageResponse, Strategy: PaginationStrategy>(
        _ endpoint: Endpoint,
        key: Strategy.PageKey,
        pagination: Strategy,
        as type: Response.Type
    ) async throws(NetworkError) -> FetchedPage<Response.Item, Strategy.PageKey> {
        let response = try await response(for: pagination.endpoint(endpoint, for: key))
        let page = try decode(Response.self, from: response)
        // A total in the body wins; many APIs that page over bare arrays send it as `X-Total-Count`.
        let totalItems = page.totalItemCount ?? response.headers["X-Total-Count"].flatMap { Int($0) }
        let context = PageContext(
            itemCount: page.pageItems.count, totalItems: totalItems, totalPages: page.totalPageCount,
            nextCursor: page.nextCursor, headers: response.headers, url: response.url)
        var next = pagination.nextPageKey(after: key, context: context)
        // A server that answers with the same key again would page forever.
        if next == key { next = nil }
        return FetchedPage(items: page.pageItems, nextKey: next, context: context)
    }

    /// The pages of a list, fetched one at a time as they are iterated.
    ///
    /// ```swift
    /// for try await page in session.pages(of: RemotePosts.self) {
    ///     try await archive(page.items)
    /// }
    /// ```
    /// - Parameters:
    ///   - remote: The list's description.
    ///   - request: What selects the list.
    /// - Returns: A sequence that holds one page at a time, stops after the last page, and fetches nothing
    ///   more once the consumer stops iterating.
    public nonisolated func pages<Remote: Listable>(
        of remote: Remote.Type,
        _ request: Remote.ListRequest
    ) -> PageSequence<Remote.ListResponse, Remote.Pagination> {
        let endpoint = Result { () throws(NetworkError) -> Endpoint in try Remote.listEndpoint(for: request) }
        return PageSequence(session: self, endpoint: endpoint, pagination: Remote.pagination)
    }

    /// The pages of a list whose request is `Void`.
    /// - Parameter remote: The list's description.
    /// - Returns: The page sequence.
    public nonisolated func pages<Remote: Listable>(
        of remote: Remote.Type
    ) -> PageSequence<Remote.ListResponse, Remote.Pagination> where Remote.ListRequest == Void {
        pages(of: remote, ())
    }

    /// The pages of any list endpoint, with a strategy and a page type.
    /// - Parameters:
    ///   - endpoint: The list endpoint, without paging parameters.
    ///   - pagination: How pages are found.
    ///   - type: The decoded page type.
    /// - Returns: The page sequence.
    public nonisolated func pages<Response: PageResponse, Strategy: PaginationStrategy>(
        _ endpoint: Endpoint,
        pagination: Strategy,
        as type: Response.Type
    ) -> PageSequence<Response, Strategy> {
        PageSequence(session: self, endpoint: .success(endpoint), pagination: pagination)
    }
}

/// An `AsyncSequence` of the pages of a list, for services and batch jobs.
///
/// It holds one page at a time, so a list of any length runs in constant memory, and it requests a page only
/// when the consumer asks for it: breaking out of the loop stops the fetching.
public struct PageSequence<Response: PageResponse, Strategy: PaginationStrategy>: AsyncSequence, Sendable {
    /// A page of items.
    public typealias Element = Page<Response.Item>
    /// The error thrown.
    public typealias Failure = NetworkError

    let session: NetworkSession
    let endpoint: Result<Endpoint, NetworkError>
    let pagination: Strategy

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(sequence: self, nextKey: pagination.firstPageKey)
    }

    /// Fetches the pages.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let sequence: PageSequence
        var nextKey: Strategy.PageKey?
        var number = 0

        /// Fetches the next page, or returns `nil` after the last one.
        /// - Throws: ``NetworkError``; after an error the sequence ends.
        public mutating func next() async throws(NetworkError) -> Page<Response.Item>? {
            guard let key = nextKey else { return nil }
            nextKey = nil
            let endpoint = try sequence.endpoint.get()
            let fetched = try await sequence.session.fetchPage(
                endpoint, key: key, pagination: sequence.pagination, as: Response.self)
            nextKey = fetched.nextKey
            number += 1
            return Page(
                items: fetched.items, number: number, totalItems: fetched.context.totalItems,
                totalPages: fetched.context.totalPages, hasMore: fetched.nextKey != nil)
        }

        /// Fetches the next page.
        /// - Parameter actor: Ignored; pages are fetched off any actor.
        /// - Returns: The page, or `nil`.
        /// - Throws: ``NetworkError``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> Page<
            Response.Item
        >? {
            try await next()
        }
    }
}
