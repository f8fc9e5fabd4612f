// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit
import ResourceKitTesting
import Testing

@Test func loadingAPostShowsEveryState() async throws {
    let backend = InMemoryBackend()
    try backend.seed([Post(id: "1", title: "Hello")], into: "posts")
    let session = NetworkSession(baseURL: "http://backend.test", transport: backend)

    let post = Resource<RemotePost>(session: session)
    let recorder = post.recordStates()
    try await post.read("1")

    try await recorder.expect([.idle, .loading(previous: nil), .available(Post(id: "1", title: "Hello"))])
    #expect(backend.requestLog.map(\.path) == ["/posts/1"])
}
