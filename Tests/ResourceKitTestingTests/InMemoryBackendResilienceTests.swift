import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// Retries and deadlines against the in-memory backend's faults, on a `ManualClock`.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendResilienceTests {
    let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(100), jitter: .none)

    func fixture(latency: Duration = .zero) throws -> (InMemoryBackend, ManualClock, NetworkSession) {
        let backend = InMemoryBackend(basePath: "/api", latency: latency)
        try backend.seed([Note(id: "1", title: "one")], into: "notes")
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://backend.test/api", transport: backend, retry: policy, timeLimit: nil, clock: clock)
        return (backend, clock, session)
    }

    @Test func unavailableTwiceThenServed() async throws {
        let (backend, clock, session) = try fixture()
        backend.failNext(2, status: 503)
        let task = Task { try await session.send(Endpoint(.get, "notes/1"), as: Note.self) }
        for wait in [Duration.milliseconds(100), .milliseconds(200)] {
            #expect(try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [wait] } == [wait])
            clock.advance(by: wait)
        }
        #expect(try await task.value.title == "one")
        #expect(backend.requestLog.count == 3)
    }

    @Test func aDroppedConnectionIsRetried() async throws {
        let (backend, clock, session) = try fixture()
        backend.injectFault(.dropConnection)
        let task = Task { try await session.send(Endpoint(.get, "notes/1"), as: Note.self) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(100)] }
        clock.advance(by: .milliseconds(100))
        #expect(try await task.value.title == "one")
        #expect(backend.requestLog.count == 2)
    }

    @Test func aCreateIsNotRetriedWithoutAnIdempotencyKey() async throws {
        let (backend, _, session) = try fixture()
        backend.failNext(1, status: 503)
        await #expect(throws: NetworkError.self) {
            try await session.send(Endpoint(.post, "notes", body: .json(Note(id: "2", title: "two"))))
        }
        #expect(backend.requestLog.count == 1)
    }

    @Test func aSlowBackendEndsAtTheDeadline() async throws {
        let (_, clock, session) = try fixture(latency: .seconds(3600))
        let task = Task { try await session.send(Endpoint(.get, "notes/1", timeLimit: .milliseconds(800))) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(800)] }
        clock.advance(by: .milliseconds(800))
        await #expect(throws: NetworkError.timeout) { try await task.value }
    }
}
