/// A remote list that can be fetched page by page.
///
/// ```swift
/// struct RemotePosts: Listable {
///     typealias Value = Post
///     typealias Item = Post
///     typealias ListResponse = PageEnvelope<Post>          // {"page","perPage","totalItems","totalPages","items"}
///     static let pagination = PageNumberPagination(pageSize: 50)
///     static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
/// }
/// ```
public protocol Listable: RemoteResource {
    /// One element of the list; its `id` de-duplicates items across pages.
    associatedtype Item: Identifiable & Sendable where Item.ID: Sendable
    /// What selects the list (a filter, a parent id); `Void` by default.
    associatedtype ListRequest: Sendable = Void
    /// One decoded page: ``ArrayPage`` for a bare JSON array, ``PageEnvelope`` for PocketBase's shape, or your own.
    associatedtype ListResponse: PageResponse where ListResponse.Item == Item
    /// How the next page is found.
    associatedtype Pagination: PaginationStrategy
    /// The pagination strategy.
    static var pagination: Pagination { get }
    /// Builds the endpoint of the list, without paging parameters; the strategy adds them.
    /// - Parameter request: The list request.
    /// - Returns: The endpoint.
    /// - Throws: ``NetworkError`` when the request cannot be expressed.
    static func listEndpoint(for request: ListRequest) throws(NetworkError) -> Endpoint
    /// Where a list of a ``ResourceStore`` puts an item created elsewhere in the store (by a resource or
    /// another list); ``ListPlacement/omitted`` by default, so a list shows it once a page brings it. A list's
    /// own ``ListResource/create(_:)`` always adds the item.
    /// - Parameters:
    ///   - item: The created item.
    ///   - request: The request of the list asking.
    /// - Returns: Where the item goes in that list.
    static func placement(ofCreated item: Item, in request: ListRequest) -> ListPlacement
    /// Whether each item of a page is the whole value that a read of the item answers, as fresh: then a
    /// resource that a ``ResourceStore`` makes from this list's copy of the item starts as fresh as the
    /// page that brought it, and a read with ``ReadPolicy/skipIfFresh`` or ``ReadPolicy/staleWhileRevalidate``
    /// sends nothing within ``Readable/maxAge``. `false` by default: a list's item may be a preview (fewer
    /// fields, a summary), so a resource made from it starts stale and its first such read asks the server.
    ///
    /// A list's items count as loaded when its last first page was (a load or a refresh), its later pages
    /// included; ``ResourceStore/invalidate(_:)`` of the item makes them stale. Items restored from disk are
    /// not a holder's copy: a resource starts from its own restored value.
    static var itemsAreComplete: Bool { get }
}

extension Listable {
    /// Not inserted.
    public static func placement(ofCreated item: Item, in request: ListRequest) -> ListPlacement { .omitted }
    /// `false`: a list's item may be a preview.
    public static var itemsAreComplete: Bool { false }
}

/// One decoded page of a list, and what it says about the rest.
public protocol PageResponse: Decodable, Sendable {
    /// The item type.
    associatedtype Item: Sendable
    /// The items on this page.
    var pageItems: [Item] { get }
    /// The number of items in the whole list, when the server says.
    var totalItemCount: Int? { get }
    /// The number of pages in the whole list, when the server says.
    var totalPageCount: Int? { get }
    /// The token for the next page, for cursor pagination.
    var nextCursor: String? { get }
}

extension PageResponse {
    /// Unknown.
    public var totalItemCount: Int? { nil }
    /// Unknown.
    public var totalPageCount: Int? { nil }
    /// None.
    public var nextCursor: String? { nil }
}

/// A page that is a bare JSON array of items: `[{…}, {…}]`.
public struct ArrayPage<Item: Decodable & Sendable>: PageResponse {
    /// The items.
    public var items: [Item]

    /// Decodes the array.
    /// - Parameter decoder: The decoder.
    public init(from decoder: any Decoder) throws {
        items = try [Item](from: decoder)
    }

    /// The items.
    public var pageItems: [Item] { items }
}

/// The page shape of PocketBase's records API and many others:
/// `{"page":1,"perPage":30,"totalItems":95,"totalPages":4,"items":[…]}`.
///
/// Negative totals (PocketBase's `skipTotal=1` answers `-1`) count as unknown.
public struct PageEnvelope<Item: Decodable & Sendable>: PageResponse {
    /// The page number.
    public var page: Int?
    /// The page size.
    public var perPage: Int?
    /// The number of items in the list, or `-1` when not counted.
    public var totalItems: Int?
    /// The number of pages, or `-1` when not counted.
    public var totalPages: Int?
    /// The items.
    public var items: [Item]

    /// The items.
    public var pageItems: [Item] { items }
    /// ``totalItems`` when not negative.
    public var totalItemCount: Int? { totalItems.flatMap { $0 >= 0 ? $0 : nil } }
    /// ``totalPages`` when not negative.
    public var totalPageCount: Int? { totalPages.flatMap { $0 >= 0 ? $0 : nil } }
}

/// A cursor page: `{"items":[…],"nextCursor":"…"}`; a missing, `null` or empty cursor ends the list.
public struct CursorEnvelope<Item: Decodable & Sendable>: PageResponse {
    /// The items.
    public var items: [Item]
    /// The token of the next page.
    public var nextCursor: String?

    /// The items.
    public var pageItems: [Item] { items }
}
