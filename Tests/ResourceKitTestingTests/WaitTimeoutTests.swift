import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The testing kit's one waiter: every wait re-checks at each change and at no other time, misses none, and
/// fails with one `WaitTimeout`.
@Suite(.timeLimit(.minutes(1))) struct WaitTimeoutTests {
    struct Note: Codable, Sendable, Equatable, Identifiable {
        var id: String
    }

    struct RemoteNote: Readable {
        typealias Value = Note
        typealias ReadRequest = String
        static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes").appending(id: id) }
    }

    /// Waits for every count from 1 to 40 while 40 requests arrive from as many tasks at once: a wait that
    /// registered as a request arrived must still see it, or it would hang to its timeout.
    @Test(arguments: 0..<5)
    func waitsRegisteringWhileRequestsArriveMissNone(round: Int) async throws {
        let stub = StubTransport()
        stub.stub(.get, "/notes", json: "{}")
        let count = 40
        try await withThrowingTaskGroup(of: Void.self) { group in
            for needed in 1...count {
                group.addTask { try await stub.waitForRequests(needed, timeout: .seconds(50)) }
                group.addTask {
                    _ = try await stub.send(URLRequest(url: try #require(URL(string: "http://x.test/notes"))))
                }
            }
            try await group.waitForAll()
        }
        #expect(stub.requestCount == count)
    }

    @Test func aCancelledStateRecorderWaitEndsAtOnceWithTheStatesSeen() async throws {
        let resource = Resource<RemoteNote>(state: .idle)
        let recorder = resource.recordStates()
        try await recorder.waitForCount(1)
        let waiting = try await recorder.registeredWait(for: 2)
        waiting.cancel()
        let error = await #expect(throws: WaitTimeout.self) { try await waiting.value }
        #expect(
            error == WaitTimeout(awaited: "2 states", reason: .cancelled, timeout: .seconds(3600), seen: ["idle"]))
        #expect(error?.description == "Cancelled while waiting for 2 states; saw 1: [idle]")
        withExtendedLifetime(resource) {}
    }

    @Test func everyWaitOfTheKitFailsWithTheSameError() async throws {
        let stub = StubTransport()
        let clock = ManualClock()
        let resource = Resource<RemoteNote>(state: .idle)
        let recorder = resource.recordStates()
        let errors: [any Error] = [
            await #expect(throws: WaitTimeout.self) { try await stub.waitForRequests(1, timeout: .zero) },
            await #expect(throws: WaitTimeout.self) { try await clock.waitForSleepers(timeout: .zero) { !$0.isEmpty } },
            await #expect(throws: WaitTimeout.self) { try await recorder.waitForCount(5, timeout: .zero) },
        ].compactMap { $0 }
        #expect(errors.count == 3)
        #expect(
            errors.map { ($0 as? WaitTimeout)?.awaited } == ["1 request(s)", "the clock's sleepers", "5 states"])
        #expect(errors.allSatisfy { ($0 as? WaitTimeout)?.reason == .timedOut })
        withExtendedLifetime(resource) {}
    }
}

extension StateRecorder {
    /// Starts an hour-long wait for `count` states, and returns it once it has registered: only what a test does
    /// next (cancelling it, releasing the resource) can end it within a suite's time limit.
    func registeredWait(for count: Int) async throws -> Task<[State], any Error> {
        let registered = AsyncLatch()
        let waiting = Task { () throws(WaitTimeout) -> [State] in
            try await wait(timeout: .seconds(3600), for: "\(count) states") { states in
                registered.open()  // the condition is first asked as the wait registers
                return states.count >= count
            }
        }
        try await registered.wait()
        return waiting
    }
}
