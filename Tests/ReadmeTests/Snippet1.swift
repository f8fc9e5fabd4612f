// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit

struct Post: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
}

struct RemotePost: Readable {
    typealias Value = Post
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

func quickStart() async throws {
    let session = NetworkSession(baseURL: "https://api.example.com/v1")
    let post = Resource<RemotePost>(session: session)
    try await post.read("42")  // idle → loading(previous: nil) → available(post)
    print(post.state)
}
