import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// A read whose request is in flight on a transport the test answers, with the session's events from before
/// it: what the callers of the join tests join.
struct ReadInFlight {
    let transport = ControlledTransport()
    let session: NetworkSession
    let resource: Resource<RemotePost>
    let events: DiagnosticEvents
    let first: Task<Post, any Error>

    init() async throws {
        session = makeSession(transport)
        let resource = Resource<RemotePost>(session: session)
        self.resource = resource
        events = session.diagnostics()
        first = Task { try await resource.read("1") }
        try await transport.waitForRequests(1)
    }
}

@Suite(.timeLimit(.minutes(1))) struct JoinEventTests {
    let post = Post(id: "1", title: "One")
    let url = "http://test.local/api/posts/1"

    /// A join's count is the callers waiting right after it, even when another caller joins before the join is
    /// reported. Forced: Observation's notice of the second caller (after its lock, before its ask returns)
    /// starts a third read that joins at once, so the second's report comes after the third's join.
    @Test func aJoinCountsTheCallersWaitingRightAfterItNotThoseWhoJoinedNext() async throws {
        // `Task.immediate` runs the third read's join inside the notice; older Apple systems lack it.
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        let inFlight = try await ReadInFlight()
        let (transport, session, resource, events, first) = (
            inFlight.transport, inFlight.session, inFlight.resource, inFlight.events, inFlight.first
        )
        let third = Locked<Task<Post, any Error>?>(nil)
        let started = Locked(false)
        withObservationTracking {
            _ = resource.waitingCallerCount
        } onChange: {
            // Once: the third read's own join tells Observation too, before the tracking ends.
            let isFirst = started.withLock { isStarted in
                let isFirst = !isStarted
                isStarted = true
                return isFirst
            }
            guard isFirst else { return }
            let task = Task.immediate { try await resource.read("1") }
            third.withLock { $0 = task }
        }
        let second = Task { try await resource.read("1") }
        try await waitUntil("3 callers") { resource.waitingCallerCount == 3 }
        transport.answer(0, json: json(post))
        let thirdTask = try #require(third.withLock { $0 })
        for task in [first, second, thirdTask] { #expect(try await task.value == post) }
        #expect(transport.requestCount == 1)
        #expect(
            await eventsUntilMarker(events, session: session) == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "joined | Resource<RemotePost> | callers 3",
                "joined | Resource<RemotePost> | callers 2",
                "requestFinished | GET | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 3",
            ])
    }
}

@Suite(.timeLimit(.minutes(1))) struct QueuedChangeEventTests {
    /// A second update waits for the first and then sends its own request: it shares nothing, so it is not a
    /// `joined` caller.
    @Test func anUpdateQueuedBehindAnotherIsNotReportedAsJoined() async throws {
        let transport = ControlledTransport()
        let session = makeSession(transport)
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics()
        let first = Task { try await resource.update(Post(id: "1", title: "A")) }
        try await transport.waitForRequests(1)
        let second = Task { try await resource.update(Post(id: "1", title: "B")) }
        try await waitUntil("2 callers") { resource.waitingCallerCount == 2 }
        transport.answer(0, json: json(Post(id: "1", title: "A")))
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(Post(id: "1", title: "B")))
        #expect(try await first.value == Post(id: "1", title: "A"))
        #expect(try await second.value == Post(id: "1", title: "B"))
        let url = "http://test.local/api/posts/1"
        let seen = await eventsUntilMarker(events, session: session)
        #expect(
            seen == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | PATCH | \(url) | attempt 1",
                "requestFinished | PATCH | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → loading",
                "operationFinished | Resource<RemotePost> | callers 1",
                "requestStarted | PATCH | \(url) | attempt 1",
                "requestFinished | PATCH | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ], "\(seen)")
    }
}
