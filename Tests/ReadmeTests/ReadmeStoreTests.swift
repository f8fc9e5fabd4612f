import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs the README's "One source of truth" code on the in-memory backend, the way a new user would.
@Suite(.timeLimit(.minutes(1))) struct ReadmeStoreTests {
    /// Forwards to the backend, and refuses the second update with a `500`.
    final class RefusingSecondUpdate: HTTPTransport {
        let backend: InMemoryBackend
        let updates = Locked(0)

        init(_ backend: InMemoryBackend) { self.backend = backend }

        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            if request.httpMethod == "PATCH",
                updates.withLock({
                    $0 += 1; return $0
                }) == 2
            {
                return HTTPResponse(statusCode: 500, body: Data("{}".utf8))
            }
            return try await backend.send(request)
        }
    }

    @Test func theReadmeFlowSendsOnlyTheRequestsItPromises() async throws {
        let backend = InMemoryBackend()
        backend.addCollection("posts")
        try backend.seed(
            [Post(id: "41", title: "Before"), Post(id: "42", title: "Hello"), Post(id: "43", title: "After")],
            into: "posts")
        let session = NetworkSession(baseURL: "http://readme.test", transport: RefusingSecondUpdate(backend))
        try await shareOnePost(session: session)
        // The feed's page, one read of post 42 (its copy from the feed was stale), the update, and the refused
        // optimistic update: no refetch of the feed, and nothing reloaded by the invalidation (nobody observes).
        #expect(
            backend.requestLog.map { "\($0.method.rawValue) \($0.path)" } == [
                "GET /posts", "GET /posts/42", "PATCH /posts/42",
            ])
        #expect(try backend.records(Post.self, in: "posts").first { $0.id == "42" }?.title == "Edited")
    }
}
