import Foundation
import ResourceKitEventStream
import ResourceKitHTTP
import ResourceKitTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an event stream tells `onStatus` of its connection (the setup is in ServerSentEventsTests.swift).
extension ServerSentEventsTests {
    /// The statuses a stream told, in order.
    final class StatusLog: Sendable {
        let statuses = Locked<[EventStreamStatus]>([])
        var all: [EventStreamStatus] { statuses.withLock { $0 } }
        func record(_ status: EventStreamStatus) { statuses.withLock { $0.append(status) } }
    }

    @Test func aConnectionThatEndsIsClosedThenReconnectedAfterTheAnnouncedWait() async throws {
        stubConnections(stub, [(200, eventStream, "retry: 2000\ndata: a\n\n"), (200, eventStream, "data: b\n\n")])
        let log = StatusLog()
        let events = session().events(Endpoint(.get, "stream"), reconnect: exact, onStatus: log.record)
        var iterator = events.makeAsyncIterator()
        #expect(try await iterator.next()?.data == "a")
        #expect(log.all == [EventStreamStatus(kind: .opened, connection: 1)])
        let next = Task {
            var iterator = iterator
            return try await iterator.next()
        }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(2)) }
        clock.advance(by: .seconds(2))
        #expect(try await next.value?.data == "b")
        #expect(
            log.all == [
                EventStreamStatus(kind: .opened, connection: 1),
                EventStreamStatus(kind: .closed, connection: 1),
                EventStreamStatus(kind: .reconnecting, connection: 1, delay: .seconds(2)),
                EventStreamStatus(kind: .opened, connection: 2),
            ])
    }

    @Test func failedAttemptsTellEachWaitAndTheErrorThatEndsTheStream() async throws {
        let refused = NetworkError.transport(code: .cannotConnectToHost, message: "refused")
        stub.stub(.get, "/api/stream", error: refused)
        let log = StatusLog()
        let policy = ReconnectPolicy(
            initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5), jitter: .none, maximumAttempts: 3)
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: policy, onStatus: log.record)
                .makeAsyncIterator()
            return try await iterator.next()
        }
        for wait in [1, 2] {
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(wait)) }
            clock.advance(by: .seconds(wait))
        }
        await #expect(throws: refused) { try await reading.value }
        // No attempt opened, so nothing closed.
        #expect(
            log.all == [
                EventStreamStatus(kind: .reconnecting, connection: 0, delay: .seconds(1), failures: 1, error: refused),
                EventStreamStatus(kind: .reconnecting, connection: 0, delay: .seconds(2), failures: 2, error: refused),
                EventStreamStatus(kind: .finished, connection: 0, failures: 3, error: refused),
            ])
    }

    @Test func theServersStopFinishesWithoutAnError() async throws {
        stubConnections(stub, [(204, [:], "")])
        let log = StatusLog()
        var iterator = session().events(Endpoint(.get, "stream"), onStatus: log.record).makeAsyncIterator()
        #expect(try await iterator.next() == nil)
        #expect(try await iterator.next() == nil)
        #expect(log.all == [EventStreamStatus(kind: .finished, connection: 0)])
    }

    @Test func aRefusedStreamFinishesWithItsError() async throws {
        stubConnections(stub, [(200, ["Content-Type": "application/json"], "{}")])
        let log = StatusLog()
        var iterator = session().events(Endpoint(.get, "stream"), onStatus: log.record).makeAsyncIterator()
        let error = await #expect(throws: NetworkError.self) { try await iterator.next() }
        #expect(log.all == [EventStreamStatus(kind: .finished, connection: 0, error: error)])
        #expect(error?.code == .invalidResponse)
    }

    @Test func anOversizedEventClosesTheConnectionAndFinishesTheStream() async throws {
        stubConnections(stub, [(200, eventStream, "data: " + String(repeating: "x", count: 5_000) + "\n\n")])
        let log = StatusLog()
        var iterator = session().events(Endpoint(.get, "stream"), maximumEventSize: 1_000, onStatus: log.record)
            .makeAsyncIterator()
        let error = try #require(await #expect(throws: NetworkError.self) { try await iterator.next() })
        #expect(
            log.all == [
                EventStreamStatus(kind: .opened, connection: 1),
                EventStreamStatus(kind: .closed, connection: 1, error: error),
                EventStreamStatus(kind: .finished, connection: 1, error: error),
            ])
    }

    @Test func cancellingWhileReadingClosesTheConnectionAndFinishesCancelled() async throws {
        stub.stubStreaming(.get, "/api/stream") { request in
            let (body, writer) = ResponseBody.makeStream()
            _ = writer.yield(Data("data: first\n\n".utf8))
            return StreamedResponse(statusCode: 200, headers: eventStream, url: request.url, body: body)
        }
        let log = StatusLog()
        let firstEvent = AsyncLatch()
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: exact, onStatus: log.record)
                .makeAsyncIterator()
            _ = try await iterator.next()
            firstEvent.open()
            return try await iterator.next()
        }
        try await firstEvent.wait()
        reading.cancel()
        await #expect(throws: NetworkError.cancelled) { try await reading.value }
        #expect(
            log.all == [
                EventStreamStatus(kind: .opened, connection: 1),
                EventStreamStatus(kind: .closed, connection: 1, error: .cancelled),
                EventStreamStatus(kind: .finished, connection: 1, error: .cancelled),
            ])
    }

    @Test func cancellingWhileWaitingToReconnectFinishesCancelled() async throws {
        stubConnections(stub, [(200, eventStream, "data: a\n\n")])
        let log = StatusLog()
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: exact, onStatus: log.record)
                .makeAsyncIterator()
            _ = try await iterator.next()
            return try await iterator.next()
        }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        reading.cancel()
        await #expect(throws: NetworkError.cancelled) { try await reading.value }
        #expect(
            log.all == [
                EventStreamStatus(kind: .opened, connection: 1),
                EventStreamStatus(kind: .closed, connection: 1),
                EventStreamStatus(kind: .reconnecting, connection: 1, delay: .seconds(3)),
                EventStreamStatus(kind: .finished, connection: 1, error: .cancelled),
            ])
        #expect(
            log.all.map(\.description).last == "finished(connection: 1, error: The request was cancelled)")
    }
}
