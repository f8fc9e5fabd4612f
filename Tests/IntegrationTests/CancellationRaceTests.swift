import Foundation
import ResourceKit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancelling a request at every moment of its life on a real socket, its completion included: the caller
/// gets the value or `.cancelled`, and the process never crashes or hangs.
@Suite(.timeLimit(.minutes(2))) struct CancellationRaceTests {
    /// A server that closes the connection as it answers makes the response complete at the moment the
    /// connection ends; cancelling then is what swift-corelibs-foundation cannot survive.
    @Test func cancelRacingAClosingResponseReturnsTheValueOrCancelled() async throws {
        let server = try ClosingServer(body: #"{"id":1}"#)
        defer { server.close() }
        // A plain ephemeral configuration comes with an in-memory URL cache: the path that crashed.
        let transports = [URLSessionTransport(timeout: .seconds(45)), URLSessionTransport(configuration: .ephemeral)]
        for transport in transports {
            let session = NetworkSession(baseURL: "http://127.0.0.1:\(server.port)", transport: transport)
            try await race(session, Endpoint(.get, "row"))
        }
    }

    @Test(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason))
    func cancelRacingAKeptAliveResponseReturnsTheValueOrCancelled() async throws {
        try await race(PocketBase.session(), Endpoint(.get, "posts/records", query: ["perPage": "1"]))
    }

    func race(_ session: NetworkSession, _ endpoint: Endpoint) async throws {
        var outcomes = (values: 0, cancelled: 0)
        for attempt in 0..<1500 {
            let task = Task { try await session.data(for: endpoint) }
            // Spread the cancellation over the request's life (0 to 3 ms): before it is sent, while the server
            // answers, and as the response completes. Timing only varies where it lands; nothing waits on it.
            let cancelAt = ContinuousClock.now + .microseconds(attempt % 60 * 50)
            // lint-waits: spreads the cancellation over real time; nothing waits for a condition.
            while ContinuousClock.now < cancelAt { await Task.yield() }
            task.cancel()
            do {
                _ = try await task.value
                outcomes.values += 1
            } catch let error as NetworkError {
                #expect(error == .cancelled)
                outcomes.cancelled += 1
            }
        }
        // Both outcomes happened, so cancellations landed before and after the response.
        #expect(outcomes.values > 0)
        #expect(outcomes.cancelled > 0)
    }
}

@Suite(.timeLimit(.minutes(1))) struct HeaderInjectionSocketTests {
    @Test func injectedHeaderNameNeverReachesTheSocket() async throws {
        let server = try ClosingServer(body: #"{"id":1}"#)
        defer { server.close() }
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
        await #expect(throws: NetworkError.self) {
            try await session.send(Endpoint(.get, "row", headers: ["X-A\r\nX-Injected": "1"]))
        }
        // The same session still works, and the server saw only that request.
        let data = try await session.data(for: Endpoint(.get, "row"))
        #expect(data == Data(#"{"id":1}"#.utf8))
        #expect(server.connectionCount == 1)
    }
}
