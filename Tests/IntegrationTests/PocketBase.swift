import Foundation
import ResourceKit
import ResourceKitPocketBase
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server `Scripts/pocketbase start` runs; `Scripts/test` always sets it.
enum PocketBase {
    static let environment = ProcessInfo.processInfo.environment
    static let url = environment["POCKETBASE_URL"]
    static let isConfigured = url != nil
    static let skipReason: Comment =
        "POCKETBASE_URL is not set: run Scripts/test, or Scripts/pocketbase start and export its env"
    static let seeded = Int(environment["POCKETBASE_SEEDED"] ?? "") ?? 1000

    static func session(adapters: [any RequestAdapting] = []) -> NetworkSession {
        NetworkSession(
            baseURL: (url ?? "http://127.0.0.1:1") + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)), adapters: adapters)
    }

    /// Logs in as the superuser and returns the token.
    static func token() async throws -> String {
        struct Auth: Decodable { var token: String }
        struct Credentials: Encodable { var identity: String; var password: String }
        let credentials = Credentials(
            identity: environment["POCKETBASE_EMAIL"] ?? "", password: environment["POCKETBASE_PASSWORD"] ?? "")
        let auth: Auth = try await session().send(
            Endpoint(.post, "_superusers/auth-with-password", body: .json(credentials)))
        return auth.token
    }

    /// Logs in as the superuser and returns a session whose adapter sends the token.
    static func authenticated() async throws -> NetworkSession {
        let token = try await token()
        return session(adapters: [
            RequestAdapter { request in
                var request = request
                request.setValue(token, forHTTPHeaderField: "Authorization")
                return request
            }
        ])
    }
}

struct PBPost: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
    var userId: Int?
    var position: Int?
}

struct NewPBPost: Codable, Sendable {
    var title: String?
    var body: String
    var userId: Int
}

struct RemotePBPost: Readable, Creatable, Updatable, Deletable {
    typealias Value = PBPost
    typealias ReadRequest = String
    typealias CreateRequest = NewPBPost
    typealias DeleteRequest = PBPost

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts/records").appending(id: id) }
    static func createEndpoint(for post: NewPBPost) -> Endpoint { Endpoint(.post, "posts/records", body: .json(post)) }
    static func updateEndpoint(for post: PBPost) -> Endpoint {
        Endpoint(.patch, "posts/records", body: .json(post)).appending(id: post.id)
    }
    static func deleteEndpoint(for post: PBPost) -> Endpoint {
        Endpoint(.delete, "posts/records").appending(id: post.id)
    }
}

struct RemotePBPosts: Listable {
    typealias Value = PBPost
    typealias Item = PBPost
    typealias ListResponse = PageEnvelope<PBPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint {
        Endpoint(.get, "posts/records", query: ["sort": "position"])
    }
}

/// The seeded posts alone (positions 1 to `PocketBase.seeded`): posts other tests create while a walk runs have
/// position 0, sort first and would shift the pages under it.
struct SeededPBPosts: Listable {
    typealias Value = PBPost
    typealias Item = PBPost
    typealias ListResponse = PageEnvelope<PBPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint {
        Endpoint(
            .get, "posts/records",
            query: ["sort": "position", "filter": "position >= 1 && position <= \(PocketBase.seeded)"])
    }
}
