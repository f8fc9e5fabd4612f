import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

/// A post whose update streams its body from a file (`RequestBody.file`): the outbox does not keep it.
struct RemoteFileBodyPost: Readable, Updatable {
    typealias Value = Post
    typealias ReadRequest = String

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func readRequest(from value: Post?) -> String? { value?.id }
    static func updateEndpoint(for post: Post) -> Endpoint {
        // The body is written to a file of its own, and sent from it.
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("post-\(UUID().uuidString).json")
        try? JSONEncoder().encode(post).write(to: url)
        return Endpoint(.patch, "posts", body: .file(url, contentType: "application/json")).appending(id: post.id)
    }
}

@Suite(.timeLimit(.minutes(1))) struct OutboxStreamedBodyTests {
    @Test func anUpdateWhoseBodyStreamsFromAFileFailsOfflineAsWithoutAnOutbox() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed([Post(id: "42", title: "Hello")], into: "posts")
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: [.resources(RemoteFileBodyPost.self)])
        let store = ResourceStore(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend), persistence: persistence)
        let post = store.resource(RemoteFileBodyPost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        var edited = try #require(post.value)
        edited.title = "From a file"
        do {
            _ = try await post.update(edited, optimistic: edited)
            Issue.record("an update was sent to an unreachable server")
        } catch {
            #expect(error.isUnreachable, "\(error)")
            #expect(error.code != .queued)
        }
        #expect(store.outbox?.pending.isEmpty == true)
        // Rolled back: the optimistic value is not left showing.
        #expect(post.value?.title == "Hello")
        // Online, the same update streams its body from the file.
        backend.isReachable = true
        _ = try await post.update(edited)
        #expect(backend.requestLog.last?.body.map { try? JSONDecoder().decode(Post.self, from: $0) } == edited)
        #expect(try backend.records(Post.self, in: "posts").first?.title == "From a file")
    }
}
