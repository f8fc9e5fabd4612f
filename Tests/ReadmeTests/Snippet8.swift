// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit

/// Posts stay fresh for 30 seconds: `.skipIfFresh` reads answer from memory until then.
struct RemoteStoredPost: Readable, Updatable {
    typealias Value = Post
    typealias ReadRequest = String
    static let maxAge: Duration = .seconds(30)
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
}

/// The post screen's service and the feed's: they never talk to each other.
struct PostScreen {
    let post: Resource<RemoteStoredPost>
    init(store: ResourceStore, id: String) { post = store.resource(RemoteStoredPost.self, id: id) }
}

struct Feed {
    let posts: ListResource<RemotePostPages>
    init(store: ResourceStore) { posts = store.list(RemotePostPages.self) }
}

func shareOnePost(session: NetworkSession) async throws {
    let store = ResourceStore(session: session)
    let feed = Feed(store: store)
    try await feed.posts.loadFirstPage()

    let screen = PostScreen(store: store, id: "42")
    let other = PostScreen(store: store, id: "42")
    assert(screen.post === other.post)  // one object, one request, one state
    // It starts from the feed's copy of post 42; a fresh-only read asks the server once, then not for 30 s.
    var post = try await screen.post.read("42", policy: .skipIfFresh)

    post.title = "Edited"
    try await screen.post.update(post)  // the feed shows the edit: no refetch

    post.title = "Bolder"
    do {
        // Shown at once in the screen and the feed; if the server refuses, both show "Edited" again.
        try await screen.post.update(post, optimistic: post)
    } catch {
        print("refused, rolled back: \(error)")
    }

    await store.invalidate(RemoteStoredPost.self, id: "42")  // stale now; observed holders reload
}
