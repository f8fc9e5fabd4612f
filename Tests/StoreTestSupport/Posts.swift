import Foundation
package import ResourceKit

/// A post, as most tests read, list and change one.
package struct Post: Codable, Sendable, Equatable, Identifiable, Placeholdable {
    package var id: String
    package var title: String
    package var body: String = ""

    package init(id: String, title: String, body: String = "") {
        self.id = id
        self.title = title
        self.body = body
    }

    package static var placeholder: Post { Post(id: "placeholder", title: "Loading…") }
}

package struct RemotePost: Readable, Creatable, Updatable, Deletable {
    package typealias Value = Post
    package typealias ReadRequest = String
    package typealias DeleteRequest = Post

    package static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    package static func readRequest(from value: Post?) -> String? { value?.id }
    package static func createEndpoint(for post: Post) -> Endpoint { Endpoint(.post, "posts", body: .json(post)) }
    package static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
    package static func deleteEndpoint(for post: Post) -> Endpoint { Endpoint(.delete, "posts").appending(id: post.id) }
}

package func json(_ post: Post) -> String {
    String(decoding: try! JSONEncoder().encode(post), as: UTF8.self)
}
