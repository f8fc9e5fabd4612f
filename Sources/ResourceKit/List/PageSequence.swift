import Synchronization

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

/// The pages a list loaded whose answers had validators (`ETag`, `Last-Modified`), by page key, so that loading
/// one again costs a `304 Not Modified` when the server's page has not changed. It holds the page's items as
/// they were answered, beside the list's own; a page answered without validators is not kept.
@usableFromInline final class PageMemo<Item: Sendable, Key: Sendable & Equatable>: Sendable {
    private let pages = Locked<[(key: Key, validators: Validators, page: FetchedPage<Item, Key>)]>([])
    /// Whether no page is kept: a list whose server sends no validators never takes the lock. (Read without
    /// it, a page kept at the same moment may be missed: that load is then unconditional, as before.)
    private let isEmpty = Atomic<Bool>(true)

    @usableFromInline init() {}

    func page(for key: Key) -> (validators: Validators, page: FetchedPage<Item, Key>)? {
        guard !isEmpty.load(ordering: .acquiring) else { return nil }
        return pages.withLock { pages in pages.first { $0.key == key }.map { ($0.validators, $0.page) } }
    }

    func keep(_ page: FetchedPage<Item, Key>, validators: Validators?, for key: Key) {
        if validators == nil, isEmpty.load(ordering: .acquiring) { return }
        pages.withLock { pages in
            defer { isEmpty.store(pages.isEmpty, ordering: .releasing) }
            let position = pages.firstIndex { $0.key == key }
            switch (position, validators) {
            case (let position?, let validators?): pages[position] = (key, validators, page)
            case (let position?, nil): pages.remove(at: position)
            case (nil, let validators?): pages.append((key, validators, page))
            case (nil, nil): break
            }
        }
    }
}

extension NetworkSession {
    /// Fetches the page with `key` and asks the strategy for the next key.
    /// - Parameter memo: The pages a list loaded with validators: the page is asked for unless it still
    ///   matches them, and a `304 Not Modified` answers with the page kept, decoding nothing.
    nonisolated func fetchPage<Response: PageResponse, Strategy: PaginationStrategy>(
        _ endpoint: Endpoint,
        key: Strategy.PageKey,
        pagination: Strategy,
        as type: Response.Type,
        memo: PageMemo<Response.Item, Strategy.PageKey>? = nil
    ) async throws(NetworkError) -> FetchedPage<Response.Item, Strategy.PageKey> {
        // Only the validators wait for the answer (a smaller frame across the await); the page is looked up once
        // the server says it has not changed.
        let asked = memo?.page(for: key)?.validators
        let response = try await response(for: pagination.endpoint(endpoint, for: key), unlessMatching: asked)
        if response.statusCode == 304, let memo, let asked {
            // The page kept for the validators sent: a concurrent load of the same page may have replaced it.
            guard let kept = memo.page(for: key), kept.validators == asked else {
                throw .invalidResponse("a 304 Not Modified for a page whose answer is no longer kept")
            }
            memo.keep(kept.page, validators: Validators(response.headers) ?? asked, for: key)
            return kept.page
        }
        let page = try decode(Response.self, from: response)
        // A total in the body wins; many APIs that page over bare arrays send it as `X-Total-Count`.
        let totalItems = page.totalItemCount ?? response.headers["X-Total-Count"].flatMap { Int($0) }
        let context = PageContext(
            itemCount: page.pageItems.count, totalItems: totalItems, totalPages: page.totalPageCount,
            nextCursor: page.nextCursor, headers: response.headers, url: response.url)
        var next = pagination.nextPageKey(after: key, context: context)
        // A server that answers with the same key again would page forever.
        if next == key { next = nil }
        let fetched = FetchedPage(items: page.pageItems, nextKey: next, context: context)
        memo?.keep(fetched, validators: Validators(response.headers), for: key)
        return fetched
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
    ///   more once the consumer stops iterating. A page whose next page was fetched before (a cursor or `Link`
    ///   cycle, A → B → A) is the last it gives (`hasMore` false), and the iteration then throws
    ///   ``NetworkError/invalidResponse(_:)``, as a list ends such a cycle; a page that names itself as the next
    ///   is the last, without an error.
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
        /// The keys fetched so far, and the error that ends a cycle through one of them.
        var fetchedKeys: [Strategy.PageKey] = []
        var cycle: NetworkError?

        /// Fetches the next page, or returns `nil` after the last one.
        /// - Throws: ``NetworkError``; after an error the sequence ends.
        public mutating func next() async throws(NetworkError) -> Page<Response.Item>? {
            if let cycle {
                self.cycle = nil
                throw cycle
            }
            guard let key = nextKey else { return nil }
            nextKey = nil
            let endpoint = try sequence.endpoint.get()
            let fetched = try await sequence.session.fetchPage(
                endpoint, key: key, pagination: sequence.pagination, as: Response.self)
            fetchedKeys.append(key)
            // A next page fetched before (A → B → A) would page forever: this page is the last one given, and
            // the sequence ends with the error, as a list does.
            if let next = fetched.nextKey, fetchedKeys.contains(next) {
                cycle = .invalidResponse(
                    "the next page (\(next)) was fetched before: the server's pagination has a cycle, so the pages end")
            } else {
                nextKey = fetched.nextKey
            }
            number += 1
            return Page(
                items: fetched.items, number: number, totalItems: fetched.context.totalItems,
                totalPages: fetched.context.totalPages, hasMore: nextKey != nil)
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
