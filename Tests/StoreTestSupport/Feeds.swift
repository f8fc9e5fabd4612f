package import ResourceKit

/// Lists of posts, one per feed name; every feed lists every post. The "latest" feed puts a post created
/// elsewhere at its start, "oldest" at its end, the others leave it out.
package struct RemoteFeed: Listable, Creatable, Updatable, Deletable {
    package typealias Value = Post
    package typealias Item = Post
    package typealias ListRequest = String
    package typealias ListResponse = PageEnvelope<Post>
    package static let pagination = PageNumberPagination(pageSize: 50)
    package static func listEndpoint(for feed: String) -> Endpoint {
        Endpoint(.get, "posts").setting(query: "feed", to: feed)
    }
    package static func placement(ofCreated item: Post, in feed: String) -> ListPlacement {
        switch feed {
        case "latest": .start
        case "oldest": .end
        default: .omitted
        }
    }
    package static func createEndpoint(for post: Post) -> Endpoint { Endpoint(.post, "posts", body: .json(post)) }
    package static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
    package static func deleteEndpoint(for post: Post) -> Endpoint { Endpoint(.delete, "posts").appending(id: post.id) }
}

/// Another way to read a post: a different `Remote` type for the same item, so a different object.
package struct RemotePostPreview: Readable {
    package typealias Value = Post
    package typealias ReadRequest = String
    package static func readEndpoint(for id: String) -> Endpoint {
        Endpoint(.get, "posts").appending(id: id).setting(query: "preview", to: "1")
    }
}
