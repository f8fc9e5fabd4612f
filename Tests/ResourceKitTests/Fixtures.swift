import Foundation
import ResourceKit
import ResourceKitTesting
import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Post: Codable, Sendable, Equatable, Identifiable, Placeholdable {
    var id: String
    var title: String
    var body: String = ""

    static var placeholder: Post { Post(id: "placeholder", title: "Loading…") }
}

struct RemotePost: Readable, Creatable, Updatable, Deletable {
    typealias Value = Post
    typealias ReadRequest = String
    typealias DeleteRequest = Post

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func readRequest(from value: Post?) -> String? { value?.id }
    static func createEndpoint(for post: Post) -> Endpoint { Endpoint(.post, "posts", body: .json(post)) }
    static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
    static func deleteEndpoint(for post: Post) -> Endpoint { Endpoint(.delete, "posts").appending(id: post.id) }
}

func json(_ post: Post) -> String {
    String(decoding: try! JSONEncoder().encode(post), as: UTF8.self)
}

/// A session with no deadline, for the model tests: the reference models know nothing of time, and a
/// schedule slowed down by a loaded machine must not meet the default 60 s deadline.
func makeTimelessSession(_ transport: any HTTPTransport) -> NetworkSession {
    NetworkSession(baseURL: "http://test.local/api", transport: transport, timeLimit: nil)
}

/// A schedule test's wait that did not end, with what the store held.
struct StuckSchedule: Error, CustomStringConvertible {
    var description: String
}
