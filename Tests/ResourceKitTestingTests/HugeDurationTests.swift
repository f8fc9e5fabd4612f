import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// Durations decades long in the testing kit neither trap (`Task.sleep` does on such a deadline) nor hang.
@Suite(.timeLimit(.minutes(1))) struct HugeDurationTests {
    struct Note: Codable, Sendable, Equatable {
        var id: String
    }

    struct RemoteNote: Readable {
        typealias Value = Note
        static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "notes/1") }
    }

    @Test func aRecorderWaitWithAHugeTimeoutEndsWhenItsStatesCome() async throws {
        let resource = Resource<RemoteNote>(state: .idle)
        let recorder = resource.recordStates()
        let wait = Task { try await recorder.waitForCount(2, timeout: .seconds(Int64.max)) }
        _ = try? await resource.read()
        let states = try await wait.value
        #expect(states.count >= 2)
        #expect(states.first == .idle)
        extendLifetime(resource)
    }

    @Test func aStubWithAHugeDelayIsCancelledCleanly() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/notes/1", body: Data(#"{"id":"1"}"#.utf8), delay: .seconds(Int64.max))
        let session = NetworkSession(baseURL: "http://x.test/api", transport: stub, timeLimit: nil)
        let read = Task { try await session.send(Endpoint(.get, "notes/1"), as: Note.self) }
        try await stub.waitForRequests(1, timeout: .seconds(5))
        read.cancel()
        await #expect(throws: NetworkError.cancelled) { try await read.value }
    }

    @Test func aBackendWithAHugeLatencyIsCancelledCleanly() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("notes")
        try backend.seed([Note(id: "1")], into: "notes")
        backend.setLatency(.seconds(Int64.max))
        let session = NetworkSession(baseURL: "http://x.test/api", transport: backend, timeLimit: nil)
        let read = Task { try await session.send(Endpoint(.get, "notes/1"), as: Note.self) }
        try await Changes.wait("the request reaches the backend", timeout: .seconds(120)) {
            !backend.requestLog.isEmpty
        }
        #expect(backend.requestLog.count == 1)
        read.cancel()
        await #expect(throws: NetworkError.cancelled) { try await read.value }
    }
}
