// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit
import ResourceKitTesting
import Testing

@Test func pagingAppendsEachPage() async throws {
    let backend = InMemoryBackend()
    try backend.seed((1...120).map { Post(id: "\($0)", title: "Post \($0)") }, into: "posts")
    let session = NetworkSession(baseURL: "http://backend.test", transport: backend)

    let posts = ListResource<RemotePostPages>(session: session)
    let recorder = posts.recordStates()
    try await posts.loadNextPage()  // page 1: the content loads
    try await posts.loadNextPage()  // page 2: appended, the first 50 stay visible

    #expect(posts.items.count == 100)
    #expect(posts.pagination.totalCount == 120)
    let states = try await recorder.waitForCount(5)
    #expect(states.map(\.content.isLoading) == [false, true, false, false, false])
    #expect(states.map(\.pagination.isLoadingNextPage) == [false, false, false, true, false])
}

extension Post: Placeholdable {
    static var placeholder: Post { Post(id: "", title: "Loading…") }
    static func placeholders(count: Int) -> [Post] {
        (0..<max(0, count)).map { Post(id: "placeholder-\($0)", title: "Loading…") }
    }
}

// A preview, or a loading skeleton: fixed states, no network.
let previewList = ListResource<RemotePostPages>.placeholder(count: 5)
let skeletonList = ListResource<RemotePostPages>.placeholder(count: 5, isLoading: true)
