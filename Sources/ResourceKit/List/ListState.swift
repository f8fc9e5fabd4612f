/// Where a paginated list stands.
public struct PaginationStatus: Sendable, Equatable {
    /// Whether another page can be loaded.
    public var hasMore: Bool
    /// Whether a next page is being loaded.
    public var isLoadingNextPage: Bool
    /// The error of the last next-page load, until the next attempt; the loaded items stay.
    public var nextPageError: NetworkError?
    /// How many pages make up the list.
    public var pagesLoaded: Int
    /// The number of items on the server, when it says.
    public var totalCount: Int?

    /// Creates a status.
    /// - Parameters:
    ///   - hasMore: Whether another page can be loaded.
    ///   - isLoadingNextPage: Whether a next page is being loaded.
    ///   - nextPageError: The last next-page error.
    ///   - pagesLoaded: How many pages are loaded.
    ///   - totalCount: The server's item count.
    public init(
        hasMore: Bool = true, isLoadingNextPage: Bool = false, nextPageError: NetworkError? = nil,
        pagesLoaded: Int = 0, totalCount: Int? = nil
    ) {
        self.hasMore = hasMore
        self.isLoadingNextPage = isLoadingNextPage
        self.nextPageError = nextPageError
        self.pagesLoaded = pagesLoaded
        self.totalCount = totalCount
    }
}

/// The state of a ``ListResource``: its items and its pagination.
public struct ListState<Item: Sendable>: Sendable {
    /// The items: `loading(previous:)` while the first page (re)loads, `failure(_, previous:)` after a failed
    /// page, with every loaded item kept.
    public var content: ResourceState<[Item]>
    /// Where the pagination stands.
    public var pagination: PaginationStatus

    /// Creates a list state.
    /// - Parameters:
    ///   - content: The items.
    ///   - pagination: The pagination status.
    public init(content: ResourceState<[Item]> = .idle, pagination: PaginationStatus = PaginationStatus()) {
        self.content = content
        self.pagination = pagination
    }

    /// The items known now, loaded or kept from before.
    public var items: [Item] { content.value ?? [] }
}

extension ListState: Equatable where Item: Equatable {}

extension ListState: CustomStringConvertible {
    /// The content and the pagination in one line.
    public var description: String {
        let status = pagination
        var parts = ["pages: \(status.pagesLoaded)", "hasMore: \(status.hasMore)"]
        if status.isLoadingNextPage { parts.append("loadingNextPage") }
        if let error = status.nextPageError { parts.append("nextPageError: \(error)") }
        if let total = status.totalCount { parts.append("total: \(total)") }
        return "\(content) [\(parts.joined(separator: ", "))]"
    }
}
