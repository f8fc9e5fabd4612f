// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit

// Page number + page size, reading totals from PocketBase's {"page","perPage","totalItems","totalPages","items"}
struct RemotePostPages: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

// Offset + limit over a bare JSON array
struct RemotePostOffsets: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = ArrayPage<Post>
    static let pagination = OffsetPagination(limit: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

// A cursor from the body: {"items":[…],"nextCursor":"…"}
struct RemotePostCursor: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = CursorEnvelope<Post>
    static let pagination = CursorPagination(cursorParameter: "cursor", pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

// RFC 8288 Link: <…>; rel="next" headers, relative links included
struct RemotePostLinks: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = ArrayPage<Post>
    static let pagination = LinkHeaderPagination()
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts", query: ["limit": "50"]) }
}

func paginate(session: NetworkSession) async throws {
    let posts = ListResource<RemotePostPages>(session: session)
    try await posts.loadNextPage()  // page 1
    try await posts.loadNextPage()  // page 2, appended
    print(posts.items.count, posts.pagination.hasMore, posts.pagination.totalCount ?? -1)
    try await posts.loadAll(maxPages: 10)

    // For services and batch jobs: one page in memory at a time, nothing fetched after a break.
    for try await page in session.pages(of: RemotePostLinks.self) {
        print("page \(page.number): \(page.items.count) posts")
    }
}
