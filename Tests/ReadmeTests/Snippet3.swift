// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit

struct NewPost: Codable, Sendable {
    var title: String
}

struct RemoteEditablePost: Readable, Creatable, Updatable, Deletable {
    typealias Value = Post
    typealias ReadRequest = String
    typealias CreateRequest = NewPost

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func readRequest(from value: Post?) -> String? { value?.id }
    static func createEndpoint(for post: NewPost) -> Endpoint { Endpoint(.post, "posts", body: .json(post)) }
    static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
    static func deleteEndpoint(for post: Post) -> Endpoint { Endpoint(.delete, "posts").appending(id: post.id) }
}

func editPost(session: NetworkSession) async throws {
    let post = Resource<RemoteEditablePost>(session: session)
    var created = try await post.create(NewPost(title: "Hello"))
    created.title = "Hello, again"
    try await post.update(created)
    try await post.read()  // the id comes from the current value
    try await post.delete()  // a hard delete: the state becomes .idle
}
