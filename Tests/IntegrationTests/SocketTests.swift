import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct SocketTests {
    @Test func cancellingAReadInFlightCancelsTheHTTPRequest() async throws {
        let server = try SilentServer()
        defer { server.close() }
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
        struct Remote: Readable {
            typealias Value = String
            typealias ReadResponse = String
            static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "slow") }
        }
        let resource = Resource<Remote>(session: session, state: .available("before"))
        let task = Task { try await resource.read() }
        try await server.accepted.wait()
        // From the cancellation on: how long the connection took to be accepted is not what is tested (in a
        // loaded parallel run it took up to 12 s), the request ending long before its 45 s timeout is.
        let cancelled = ContinuousClock.now
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(ContinuousClock.now - cancelled < .seconds(5))
        #expect(resource.state == .available("before"))
    }

    @Test func connectionRefusedIsATransportError() async throws {
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(try closedPort())", transport: URLSessionTransport(timeout: .seconds(5)))
        let error = await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "x")) }
        guard let code = error?.transportCode else {
            Issue.record("expected .transport, got \(String(describing: error))"); return
        }
        #expect(code == .cannotConnectToHost)
    }

    /// Linux's `URLSession` converts timeouts with `Int(seconds) * 1000`, which traps on these.
    @Test(arguments: [TimeInterval.nan, .infinity, -.infinity, 1e300])
    func timeoutsURLSessionCannotConvertNeverCrashARequest(timeout: TimeInterval) async throws {
        let server = try ClosingServer(body: #"{"id":1}"#)
        defer { server.close() }
        let base = "http://127.0.0.1:\(server.port)"
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        let configured = NetworkSession(baseURL: base, transport: URLSessionTransport(configuration: configuration))
        #expect(try await configured.data(for: Endpoint(.get, "row")) == Data(#"{"id":1}"#.utf8))
        // An adapter may set any timeout on the request itself.
        let adapter = RequestAdapter { (request: URLRequest) async throws(NetworkError) -> URLRequest in
            var request = request
            request.timeoutInterval = timeout
            return request
        }
        let adapted = NetworkSession(
            baseURL: base, transport: URLSessionTransport(timeout: .seconds(45)), adapters: [adapter])
        #expect(try await adapted.data(for: Endpoint(.get, "row")) == Data(#"{"id":1}"#.utf8))
        #expect(server.connectionCount == 2)
    }
}
