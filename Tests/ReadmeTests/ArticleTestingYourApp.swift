// Code blocks of ResourceKitTesting.docc/TestingYourApp.md that no Snippet file holds, verbatim; ReadmeTests
// checks them.
import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Stands for an app's own recorded responses in the article's responder example.
struct RecordedResponses: Sendable {
    func response(for request: URLRequest) async throws -> HTTPResponse {
        HTTPResponse(statusCode: 200, body: Data(#"{"id":"1","title":"Hello"}"#.utf8), url: request.url)
    }
}

func replayAfterAnOutage(backend: InMemoryBackend, directory: URL, edited: Post) async throws {
    let store = ResourceStore(
        session: NetworkSession(baseURL: "http://backend.test", transport: backend),
        persistence: StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: [.resources(RemoteStoredPost.self)]))  // Readable & Updatable, read by its id
    let post = store.resource(RemoteStoredPost.self, id: "1")
    try await post.read("1")
    backend.isReachable = false
    #expect(try await post.update(edited, optimistic: edited) == edited)  // kept: every holder shows it
    #expect(store.outbox?.pending.count == 1)
    backend.isReachable = true
    await store.outbox?.replay()
    #expect(try backend.records(Post.self, in: "posts").first?.title == edited.title)
}

func stubTwoPages(firstPage: String, secondPage: String) -> StubTransport {
    let stub = StubTransport()
    stub.stub(.get, "/api/posts?page=2&perPage=20", json: secondPage)
    stub.stub(.get, "/api/posts", json: firstPage)  // any other query
    return stub
}

func stubFromFixtures(_ stub: StubTransport, fixtures: RecordedResponses) {
    stub.stub(.get, "/api/posts/1") { try await fixtures.response(for: $0) }
}

@Test func aServerThatNeverAnswersFailsAtTheTimeLimit() async throws {
    let clock = ManualClock()
    let stub = StubTransport()
    stub.stub(.get, "/posts/1", json: "{}", heldBy: AsyncLatch())  // a latch nobody opens: no answer
    let session = NetworkSession(baseURL: "http://backend.test", transport: stub, clock: clock)
    let task = Task { try await session.send(Endpoint(.get, "posts/1", timeLimit: .seconds(2))) }
    try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(2)] }
    clock.advance(by: .seconds(2))
    await #expect(throws: NetworkError.timeout) { try await task.value }
}
