import Foundation
import ResourceKitEventStream
import ResourceKitHTTP
import ResourceKitTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The head of an event stream (shared with EventStreamStatusTests.swift).
let eventStream: HTTPHeaders = ["Content-Type": "text/event-stream; charset=utf-8"]

/// A stub event stream whose n-th connection (from 1) answers `answers[n - 1]`; later ones hang up at once.
func stubConnections(_ stub: StubTransport, _ answers: [(status: Int, headers: HTTPHeaders, body: String)]) {
    let count = Atomic<Int>(0)
    stub.stubStreaming(.get, "/api/stream") { request in
        let index = count.add(1, ordering: .relaxed).newValue - 1
        let answer = index < answers.count ? answers[index] : (status: 200, headers: eventStream, body: "")
        return StreamedResponse(
            statusCode: answer.status, headers: answer.headers, url: request.url,
            body: ResponseBody(Data(answer.body.utf8)))
    }
}

@Suite(.timeLimit(.minutes(1))) struct ServerSentEventsTests {
    let stub = StubTransport()
    let clock = ManualClock()

    func session(adapters: [any RequestAdapting] = []) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: stub, adapters: adapters, clock: clock)
    }

    /// A policy without jitter, so that each wait is exact.
    let exact = ReconnectPolicy(jitter: .none)

    @Test func reconnectsAfterTheServersRetryWithTheLastEventID() async throws {
        stubConnections(
            stub,
            [
                (200, eventStream, "retry: 2000\nid: 5\ndata: a\n\ndata: cut"),
                (200, eventStream, "data: b\n\n"),
            ])
        let opened = Locked<[Int]>([])
        let events = session().events(Endpoint(.get, "stream"), reconnect: exact) { number in
            opened.withLock { $0.append(number) }
        }
        var iterator = events.makeAsyncIterator()
        #expect(stub.requestCount == 0)
        #expect(try await iterator.next() == ServerSentEvent(data: "a", lastEventID: "5"))
        let next = Task {
            var iterator = iterator
            return try await iterator.next()
        }
        // The stream ended (its cut event dropped): the next connection waits the server's 2 s, no less.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(2)) }
        #expect(stub.requestCount == 1)
        clock.advance(by: .milliseconds(1_999))
        #expect(stub.requestCount == 1)
        clock.advance(by: .milliseconds(1))
        #expect(try await next.value == ServerSentEvent(data: "b", lastEventID: "5"))
        let requests = stub.requests
        #expect(requests.count == 2)
        #expect(requests[0].value(forHTTPHeaderField: "Last-Event-ID") == nil)
        #expect(requests[1].value(forHTTPHeaderField: "Last-Event-ID") == "5")
        for request in requests {
            #expect(request.value(forHTTPHeaderField: "Accept") == "text/event-stream")
            #expect(request.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        }
        #expect(opened.withLock { $0 } == [1, 2])
    }

    @Test func theFirstConnectionSendsAGivenLastEventIDAndTheSessionsCredentials() async throws {
        stubConnections(stub, [(200, eventStream, "data: x\n\n")])
        let adapter = RequestAdapter { request in
            var request = request
            request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
            return request
        }
        var iterator = session(adapters: [adapter]).events(Endpoint(.get, "stream"), lastEventID: "41")
            .makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "x", lastEventID: "41"))
        let request = try #require(stub.requests.first)
        #expect(request.value(forHTTPHeaderField: "Last-Event-ID") == "41")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer secret")
    }

    @Test func failedAttemptsBackOffUpToTheMaximumThenGiveUp() async throws {
        stub.stub(.get, "/api/stream", error: .transport(code: .cannotConnectToHost, message: "refused"))
        let policy = ReconnectPolicy(
            initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5), jitter: .none, maximumAttempts: 5)
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: policy).makeAsyncIterator()
            return try await iterator.next()
        }
        // Attempts 1…5 fail; the waits between them are 1, 2, 4 and 5 (the maximum) seconds.
        for (attempt, wait) in [(1, 1), (2, 2), (3, 4), (4, 5)] {
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(wait)) }
            #expect(stub.requestCount == attempt)
            clock.advance(by: .seconds(wait))
        }
        let error = await #expect(throws: NetworkError.self) { try await reading.value }
        #expect(error?.code == .transport)
        #expect(stub.requestCount == 5)
    }

    @Test func retryableStatusesReconnectAndOthersFail() async throws {
        stubConnections(
            stub,
            [
                (503, [:], "busy"),
                (200, eventStream, "data: up\n\n"),
                (404, [:], "gone"),
            ])
        let reading = Task { () -> ([String], NetworkError.Code?, Int?) in
            var events: [String] = []
            do throws(NetworkError) {
                for try await event in session().events(Endpoint(.get, "stream"), reconnect: exact) {
                    events.append(event.data)
                }
            } catch {
                return (events, error.code, error.statusCode)
            }
            return (events, nil, nil)
        }
        // After the 503, the initial 3 s; after the stream that opened and ended, 3 s again.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        clock.advance(by: .seconds(3))
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        clock.advance(by: .seconds(3))
        let (events, code, status) = await reading.value
        #expect(events == ["up"])
        #expect(code == .httpStatus)
        #expect(status == 404)
        #expect(stub.requestCount == 3)
    }

    @Test func noContentEndsTheStreamWithoutReconnecting() async throws {
        stubConnections(stub, [(200, eventStream, "data: last\n\n"), (204, [:], "")])
        var received: [String] = []
        let reading = Task {
            var received: [String] = []
            for try await event in session().events(Endpoint(.get, "stream"), reconnect: exact) {
                received.append(event.data)
            }
            return received
        }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        clock.advance(by: .seconds(3))
        received = try await reading.value
        #expect(received == ["last"])
        #expect(stub.requestCount == 2)
    }

    @Test func anotherContentTypeFails() async throws {
        stubConnections(stub, [(200, ["Content-Type": "application/json"], "{}")])
        var iterator = session().events(Endpoint(.get, "stream")).makeAsyncIterator()
        let error = await #expect(throws: NetworkError.self) { try await iterator.next() }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("application/json") == true)
        // Ended for good: no other connection.
        #expect(try await iterator.next() == nil)
        #expect(stub.requestCount == 1)
    }

    @Test func cancellingWhileWaitingToReconnectEndsAtOnceAndNeverConnectsAgain() async throws {
        stubConnections(stub, [(200, eventStream, "data: a\n\n")])
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: exact).makeAsyncIterator()
            _ = try await iterator.next()
            return try await iterator.next()
        }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        reading.cancel()
        let error = await #expect(throws: NetworkError.self) { try await reading.value }
        #expect(error?.code == .cancelled)
        clock.advance(by: .seconds(60))
        #expect(stub.requestCount == 1)
    }

    @Test func cancellingWhileReadingEndsAtOnceAndStopsTheTransfer() async throws {
        let started = AsyncLatch()
        stub.stubStreaming(.get, "/api/stream") { request in
            let (body, writer) = ResponseBody.makeStream()
            _ = writer.yield(Data("data: first\n\n".utf8))
            writer.onTermination { started.open() }
            return StreamedResponse(statusCode: 200, headers: eventStream, url: request.url, body: body)
        }
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: exact).makeAsyncIterator()
            _ = try await iterator.next()
            return try await iterator.next()
        }
        try await stub.waitForRequests(1, timeout: .seconds(5))
        reading.cancel()
        let error = await #expect(throws: NetworkError.self) { try await reading.value }
        #expect(error?.code == .cancelled)
        try await started.wait()
        clock.advance(by: .seconds(60))
        #expect(stub.requestCount == 1)
    }

    @Test func jitterLengthensTheWaitByUpToHalfNeverShortensIt() async throws {
        for (draw, expected) in [(0.0, 2_000), (1.0, 3_000), (0.5, 2_500), (-4.0, 2_000), (Double.nan, 3_000)] {
            let stub = StubTransport()
            let clock = ManualClock()
            let count = Atomic<Int>(0)
            stub.stubStreaming(.get, "/api/stream") { request in
                let first = count.add(1, ordering: .relaxed).newValue == 1
                return StreamedResponse(
                    statusCode: 200, headers: eventStream, url: request.url,
                    body: ResponseBody(Data((first ? "retry: 2000\ndata: a\n\n" : "data: b\n\n").utf8)))
            }
            let session = NetworkSession(baseURL: "http://test.local/api", transport: stub, clock: clock)
            let policy = ReconnectPolicy(jitter: .full(using: { draw }))
            let reading = Task {
                var iterator = session.events(Endpoint(.get, "stream"), reconnect: policy).makeAsyncIterator()
                _ = try await iterator.next()
                return try await iterator.next()
            }
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.milliseconds(expected)) }
            clock.advance(by: .milliseconds(expected))
            #expect(try await reading.value?.data == "b", "draw \(draw)")
        }
    }

    @Test func aServerThatHangsUpBeforeAnyEventIsBackedOffFromEvenWithRetryZero() async throws {
        stub.stubStreaming(.get, "/api/stream") { request in
            StreamedResponse(
                statusCode: 200, headers: eventStream, url: request.url, body: ResponseBody(Data("retry: 0\n\n".utf8)))
        }
        let reading = Task {
            var iterator = session().events(Endpoint(.get, "stream"), reconnect: exact).makeAsyncIterator()
            return try await iterator.next()
        }
        defer { reading.cancel() }
        // Each connection opens and ends with no event: failed attempts, from 100 ms up, doubling.
        for (attempt, wait) in [(1, 100), (2, 200), (3, 400), (4, 800)] {
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.milliseconds(wait)) }
            #expect(stub.requestCount == attempt)
            clock.advance(by: .milliseconds(wait))
        }
    }

    @Test func eachConnectionLeavesRetriesToTheReconnectionPolicy() async throws {
        stubConnections(stub, [(503, [:], "busy"), (200, eventStream, "data: up\n\n")])
        let retrying = NetworkSession(
            baseURL: "http://test.local/api", transport: stub, retry: RetryPolicy(maximumAttempts: 5, jitter: .none),
            clock: clock)
        let reading = Task {
            var iterator = retrying.events(Endpoint(.get, "stream"), reconnect: exact).makeAsyncIterator()
            return try await iterator.next()
        }
        // The 503 waits the reconnection's 3 s, not the session's retry policy's 0.5 s.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(3)) }
        #expect(stub.requestCount == 1)
        clock.advance(by: .seconds(3))
        #expect(try await reading.value?.data == "up")
    }

    @Test func neverReconnectEndsWithTheConnection() async throws {
        stubConnections(stub, [(200, eventStream, "data: a\n\n")])
        var received: [String] = []
        for try await event in session().events(Endpoint(.get, "stream"), reconnect: .never) {
            received.append(event.data)
        }
        #expect(received == ["a"])
        #expect(stub.requestCount == 1)
    }

    @Test func anOversizedEventFailsWithoutReconnecting() async throws {
        stubConnections(stub, [(200, eventStream, "data: " + String(repeating: "x", count: 5_000) + "\n\n")])
        var iterator = session().events(Endpoint(.get, "stream"), maximumEventSize: 1_000).makeAsyncIterator()
        let error = await #expect(throws: NetworkError.self) { try await iterator.next() }
        #expect(error?.code == .invalidResponse)
        #expect(stub.requestCount == 1)
    }
}
