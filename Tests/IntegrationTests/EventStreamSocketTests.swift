import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitTesting
import Synchronization
import Testing

/// Server-sent events over real sockets, with `URLSessionTransport`: what reaches the wire.
@Suite(.timeLimit(.minutes(1))) struct EventStreamSocketTests {
    @Test func reconnectsWithLastEventIDAfterTheServersRetryOnAManualClock() async throws {
        let connections = Atomic<Int>(0)
        let server = try RecordingServer { _ in
            let number = connections.add(1, ordering: .relaxed).newValue
            let body = number == 1 ? ": hello\nretry: 5000\nid: 7\ndata: a\ndata: b\n\nid: 8\ndata: cut" : "data: c\n\n"
            return .init(status: 200, headers: ["Content-Type": "text/event-stream"], body: body)
        }
        defer { server.close() }
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            clock: clock)
        let reading = Task {
            var events: [ServerSentEvent] = []
            for try await event in session.events(Endpoint(.get, "events"), reconnect: ReconnectPolicy(jitter: .none)) {
                events.append(event)
                if events.count == 2 { break }
            }
            return events
        }
        // The first connection ends after its first event: the next waits the server's 5 s.
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(5)) }
        #expect(server.requests.count == 1)
        clock.advance(by: .seconds(5))
        let events = try await reading.value
        #expect(
            events == [ServerSentEvent(data: "a\nb", lastEventID: "7"), ServerSentEvent(data: "c", lastEventID: "7")])
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.headers["Last-Event-ID"] == nil)
        // The cut event's id never became the stream's.
        #expect(requests.last?.headers["Last-Event-ID"] == "7")
        #expect(requests.allSatisfy { $0.headers["Accept"] == "text/event-stream" })
    }

    @Test func overASocketAWrongContentTypeFailsAndNoContentEndsWithNoReconnection() async throws {
        let connections = Atomic<Int>(0)
        let server = try RecordingServer { request in
            let number = connections.add(1, ordering: .relaxed).newValue
            if request.path.hasPrefix("/json") {
                return .init(status: 200, headers: ["Content-Type": "application/json"], body: "{}")
            }
            return number == 1
                ? .init(status: 200, headers: ["Content-Type": "text/event-stream"], body: "data: last\n\n")
                : .init(status: 204)
        }
        defer { server.close() }
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            clock: clock)
        let reading = Task {
            var received: [String] = []
            for try await event in session.events(Endpoint(.get, "events"), reconnect: ReconnectPolicy(jitter: .none)) {
                received.append(event.data)
            }
            return received
        }
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(3)) }
        clock.advance(by: .seconds(3))
        #expect(try await reading.value == ["last"])
        #expect(server.requests.count == 2)
        var json = session.events(Endpoint(.get, "json")).makeAsyncIterator()
        let error = await #expect(throws: NetworkError.self) { try await json.next() }
        #expect(error?.code == .invalidResponse)
        #expect(server.requests.count == 3)
    }

    @Test func cancellingEndsAtOnceWithNoReconnection() async throws {
        let server = try RecordingServer { _ in
            .init(status: 200, headers: ["Content-Type": "text/event-stream"], body: "data: a\n\n")
        }
        defer { server.close() }
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            clock: clock)
        let reading = Task {
            var iterator = session.events(Endpoint(.get, "events"), reconnect: ReconnectPolicy(jitter: .none))
                .makeAsyncIterator()
            _ = try await iterator.next()
            return try await iterator.next()
        }
        try await clock.waitForSleepers(timeout: .seconds(10)) { $0.contains(.seconds(3)) }
        reading.cancel()
        await #expect(throws: NetworkError.cancelled) { try await reading.value }
        clock.advance(by: .seconds(60))
        #expect(server.requests.count == 1)
    }
}
