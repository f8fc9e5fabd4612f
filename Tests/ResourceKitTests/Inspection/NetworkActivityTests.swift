import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct NetworkActivityTests {
    @Test func coalescedReadsCountOnce() async throws {
        let transport = ControlledTransport()
        let session = makeSession(transport)
        let activity = session.activity
        #expect(activity.status == NetworkActivity.Status(requestsInFlight: 0, isBusy: false))
        let resources = (1...5).map { _ in Resource<RemotePost>(session: session) }
        var reads: [Task<Post, any Error>] = []
        for (index, resource) in resources.enumerated() {
            for _ in 0..<4 { reads.append(Task { try await resource.read("\(index + 1)") }) }
        }
        try await waitUntil("20 callers") { resources.map(\.waitingCallerCount).reduce(0, +) == 20 }
        try await transport.waitForRequests(5)
        #expect(activity.requestsInFlight == 5)
        #expect(activity.isBusy)
        #expect(session.snapshot().requests.count == 5)
        for index in 0..<5 { transport.answer(index, .success(postResponse(Post(id: "\(index + 1)", title: "t")))) }
        for read in reads { _ = try await read.value }
        #expect(transport.requestCount == 5)
        #expect(activity.requestsInFlight == 0)
        #expect(session.snapshot().requests.isEmpty)
    }

    /// The activity is one object per session, whoever asks first, and it counts the calls that began before
    /// anyone asked: the session counts always, the indicator starts from that count.
    @Test func oneActivityPerSessionCountingCallsBegunBeforeItWasAskedFor() async throws {
        let transport = ControlledTransport()
        let session = makeSession(transport)
        let reads = (1...3).map { index in
            Task { try await Resource<RemotePost>(session: session).read("\(index)") }
        }
        try await transport.waitForRequests(3)
        let first = await withTaskGroup(of: NetworkActivity.self) { group in
            for _ in 0..<8 { group.addTask { session.activity } }
            return await group.reduce(into: [NetworkActivity]()) { $0.append($1) }
        }
        #expect(first.allSatisfy { $0 === session.activity })
        #expect(session.activity.status == NetworkActivity.Status(requestsInFlight: 3, isBusy: true))
        for index in 0..<3 { transport.answer(index, .success(postResponse(Post(id: "\(index + 1)", title: "t")))) }
        for read in reads { _ = try await read.value }
        #expect(session.activity.requestsInFlight == 0)
        #expect(makeSession(transport).activity !== session.activity)
    }

    /// Collects the statuses a stream delivers until `count` of them arrived.
    func statuses(_ stream: AsyncStream<NetworkActivity.Status>, count: Int) async -> [String] {
        var result: [String] = []
        for await status in stream {
            result.append(status.description)
            if result.count == count { break }
        }
        return result
    }

    @Test func aBurstWithinTheDebounceIsOneBusyPeriod() async throws {
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(200)]), timeLimit: nil,
            clock: clock, activityDebounce: .milliseconds(300))
        let updates = session.activity.updates()
        for request in 1...3 {
            try await session.send(Endpoint(.get, "ping"))
            // Each request's end schedules the indicator's turn-off; a request before it voids it.
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.count == request }
            if request < 3 { clock.advance(by: .milliseconds(100)) }
        }
        #expect(session.activity.isBusy)
        clock.advance(by: .milliseconds(300))
        #expect(
            await statuses(updates, count: 8) == [
                "0 in flight, idle",
                "1 in flight, busy", "0 in flight, busy",
                "1 in flight, busy", "0 in flight, busy",
                "1 in flight, busy", "0 in flight, busy",
                "0 in flight, idle",
            ])
        #expect(!session.activity.isBusy)
    }

    @Test func requestsFurtherApartThanTheDebounceAreTwoBusyPeriods() async throws {
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(200)]), timeLimit: nil,
            clock: clock, activityDebounce: .milliseconds(300))
        let updates = session.activity.updates()
        try await session.send(Endpoint(.get, "ping"))
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.count == 1 }
        clock.advance(by: .milliseconds(300))
        try await waitUntil("idle") { !session.activity.isBusy }
        try await session.send(Endpoint(.get, "ping"))
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.count == 1 }
        clock.advance(by: .milliseconds(300))
        #expect(
            await statuses(updates, count: 7) == [
                "0 in flight, idle",
                "1 in flight, busy", "0 in flight, busy", "0 in flight, idle",
                "1 in flight, busy", "0 in flight, busy", "0 in flight, idle",
            ])
    }

    @Test func isBusyIsObservable() async throws {
        let transport = ControlledTransport()
        let session = makeSession(transport)
        let changed = Locked(0)
        withObservationTracking {
            _ = session.activity.isBusy
        } onChange: {
            changed.withLock { $0 += 1 }
        }
        let send = Task { try await session.send(Endpoint(.get, "ping")) }
        try await transport.waitForRequests(1)
        #expect(changed.withLock { $0 } == 1)
        transport.answer(0, json: "{}")
        try await send.value
    }
}
