import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Objects of one type share the key path they name to Observation; tracking stays per object.
@Suite(.timeLimit(.minutes(1))) struct ObservationSharingTests {
    @Test func aChangeToOneResourceFiresOnlyItsOwnTracking() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", body: Data(#"{"id":"1","title":"one","body":""}"#.utf8))
        let session = makeSession(stub)
        let first = Resource<RemotePost>(session: session)
        let second = Resource<RemotePost>(session: session)
        let fired = Locked<[String]>([])
        withObservationTracking {
            _ = first.state
        } onChange: {
            fired.withLock { $0.append("first") }
        }
        withObservationTracking {
            _ = second.state
        } onChange: {
            fired.withLock { $0.append("second") }
        }
        _ = try await first.read("1")
        #expect(fired.withLock { $0 } == ["first"])
    }

    @Test func aChangeToOneListFiresOnlyItsOwnTracking() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(storePosts, into: "posts")
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let first = ListResource<RemoteFeed>(session: session, request: "a")
        let second = ListResource<RemoteFeed>(session: session, request: "b")
        let fired = Locked<[String]>([])
        withObservationTracking {
            _ = first.listState
        } onChange: {
            fired.withLock { $0.append("first") }
        }
        withObservationTracking {
            _ = second.listState
        } onChange: {
            fired.withLock { $0.append("second") }
        }
        _ = try await first.loadFirstPage()
        #expect(fired.withLock { $0 } == ["first"])
    }
}
