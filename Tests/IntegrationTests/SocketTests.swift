import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

@Suite(.timeLimit(.minutes(1))) struct SocketTests {
    @Test func cancellingAReadInFlightCancelsTheHTTPRequest() async throws {
        let server = try SilentServer()
        defer { server.close() }
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: 20))
        struct Remote: Readable {
            typealias Value = String
            typealias ReadResponse = String
            static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "slow") }
        }
        let resource = Resource<Remote>(session: session, state: .available("before"))
        let started = ContinuousClock.now
        let task = Task { try await resource.read() }
        try await server.accepted.wait()
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(resource.state == .available("before"))
    }

    @Test func connectionRefusedIsATransportError() async throws {
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(try closedPort())", transport: URLSessionTransport(timeout: 5))
        let error = await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "x")) }
        guard case .transport(let code, _) = error else {
            Issue.record("expected .transport, got \(String(describing: error))"); return
        }
        #expect(code == .cannotConnectToHost)
    }
}
