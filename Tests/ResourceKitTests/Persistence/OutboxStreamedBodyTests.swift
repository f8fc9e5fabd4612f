import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import ResourceKitTransfer
import StoreTestSupport
import Testing

/// A post whose update uploads a file: the outbox does not keep it.
struct RemotePhotoPost: Readable, Updatable {
    typealias Value = Post
    typealias ReadRequest = String

    static let photo: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("photo-\(UUID().uuidString).jpg")
        try? Data(repeating: 7, count: 1_000).write(to: url)
        return url
    }()

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func readRequest(from value: Post?) -> String? { value?.id }
    static func updateEndpoint(for post: Post) -> Endpoint {
        var form = MultipartForm()
        form.append(post.title, name: "title")
        form.append(contentsOf: photo, name: "photo", contentType: "image/jpeg")
        return Endpoint(.patch, "posts", body: .multipart(form)).appending(id: post.id)
    }
}

@Suite(.timeLimit(.minutes(1))) struct OutboxStreamedBodyTests {
    @Test func anUpdateThatUploadsAFileFailsOfflineAsWithoutAnOutbox() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed([Post(id: "42", title: "Hello")], into: "posts")
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: [.resources(RemotePhotoPost.self)])
        let store = ResourceStore(
            session: NetworkSession(baseURL: "http://test.local/api", transport: backend), persistence: persistence)
        let post = store.resource(RemotePhotoPost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        var edited = try #require(post.value)
        edited.title = "With a photo"
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
        // Online, the same update uploads the photo as a streamed form.
        backend.isReachable = true
        _ = try await post.update(edited)
        #expect(backend.requestLog.last?.body.map { $0.count > 1_000 } == true)
        #expect(try backend.records(Post.self, in: "posts").first?.title == "With a photo")
    }
}
