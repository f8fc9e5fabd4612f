import Foundation
import ResourceKitEventStream
import ResourceKitHTTP
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reconnection by status whatever error validation makes of it, and cancellation with events still in hand.
@Suite(.timeLimit(.minutes(1))) struct EventStreamEdgeTests {
    let stub = StubTransport()
    let clock = ManualClock()

    /// A server error that the validation provider turns into a `.server` error (as `PocketBaseValidation`
    /// does with PocketBase's own 429 and 500) still reconnects.
    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func aRetriedStatusMadeAServerErrorReconnects(status: Int) async throws {
        stubConnections(stub, [(status, [:], #"{"message":"busy"}"#), (200, eventStream, "data: up\n\n")])
        let decoding = ValidationClosure { response throws(NetworkError) in
            guard (200..<300).contains(response.statusCode) else {
                throw .server(ServerError(status: response.statusCode, message: "busy", body: response.body))
            }
        }
        let session = NetworkSession(
            baseURL: "http://test.local/api", validation: decoding, transport: stub, clock: clock)
        let reading = Task {
            var iterator = session.events(Endpoint(.get, "stream"), reconnect: ReconnectPolicy(jitter: .none))
                .makeAsyncIterator()
            return try await iterator.next()
        }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        clock.advance(by: .seconds(3))
        #expect(try await reading.value?.data == "up")
        #expect(stub.requestCount == 2)
    }

    /// Cancelling ends the stream at once, even with events of the last chunk not handed out yet.
    @Test func cancellingEndsTheStreamWithEventsStillInHand() async throws {
        stubConnections(stub, [(200, eventStream, "data: 1\n\ndata: 2\n\ndata: 3\n\n")])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: stub, clock: clock)
        let first = AsyncLatch()
        let cancelled = AsyncLatch()
        let reading = Task {
            var iterator = session.events(Endpoint(.get, "stream"), reconnect: .never).makeAsyncIterator()
            var seen: [String] = []
            if let event = try await iterator.next() { seen.append(event.data) }
            first.open()
            try? await cancelled.wait()
            do {
                while let event = try await iterator.next() { seen.append(event.data) }
                return (seen, nil as NetworkError?)
            } catch {
                return (seen, error as? NetworkError)
            }
        }
        try await first.wait()
        reading.cancel()
        cancelled.open()
        let (seen, error) = try await reading.value
        #expect(seen == ["1"])
        #expect(error == .cancelled)
    }
}
