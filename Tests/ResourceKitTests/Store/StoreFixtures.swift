import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport

/// Posts that stay fresh for 5 seconds.
struct RemoteCachedPost: Readable {
    typealias Value = Post
    typealias ReadRequest = String
    static let maxAge: Duration = .seconds(5)
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

/// Posts that cost their title's length in a store's memory.
struct RemoteWeighedPost: Readable {
    typealias Value = Post
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func cost(of post: Post) -> Int { post.title.count }
}

/// A post whose decoding is counted, to show that a `304` decodes nothing.
struct CountedPost: Decodable, Sendable, Equatable, Identifiable {
    static let decodings = Atomic<Int>(0)
    var id: String
    var title: String

    init(id: String, title: String) {
        self.id = id
        self.title = title
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        Self.decodings.add(1, ordering: .relaxed)
    }

    enum CodingKeys: CodingKey { case id, title }
}

struct RemoteCountedPost: Readable {
    typealias Value = CountedPost
    typealias ReadRequest = String
    static let maxAge: Duration = .seconds(5)
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

/// A page envelope of posts, for a `ControlledTransport` answer.
func feedPage(_ posts: [Post]) -> HTTPResponse {
    struct Body: Encodable {
        var page = 1
        var perPage = 50
        var totalItems: Int
        var totalPages = 1
        var items: [Post]
    }
    return HTTPResponse(statusCode: 200, body: try! JSONEncoder().encode(Body(totalItems: posts.count, items: posts)))
}
