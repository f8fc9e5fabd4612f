import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// What Observation reported of one tracking of `read`: the latch opens at the first change, and `heard` is
/// what `read` returned when called from the report itself.
private struct FirstChange: Sendable {
    let latch = AsyncLatch()
    let heard = Locked<Int?>(nil)

    init(of read: @escaping @Sendable () -> Int) {
        let (latch, heard) = (latch, heard)
        _ = withObservationTracking(read) {
            heard.withLock { $0 = read() }
            latch.open()
        }
    }

    /// Waits for the report; returns what was read in it.
    func wait() async throws -> Int? {
        try await latch.wait()
        return heard.withLock { $0 }
    }

    var isOpen: Bool { latch.isOpen }
}

private func firstChange(of read: @escaping @Sendable () -> Int) -> FirstChange { FirstChange(of: read) }

/// `waitingCallerCount` and `observerCount` are tracked by Observation, as the state is, and apart from it.
@Suite(.timeLimit(.minutes(1))) struct ObservedCountsTests {
    @Test func aListsWaitingCallersAreTrackedAsTheyJoinAndAreAnswered() async throws {
        let transport = ControlledTransport()
        let list = ListResource<RemotePagedItems>(session: makeTimelessSession(transport), request: ())
        // Each report comes once the change is made: the count read in it is the new one.
        let first = firstChange { list.waitingCallerCount }
        let load = Task { try await list.loadFirstPage() }
        #expect(try await first.wait() == 1)
        let second = firstChange { list.waitingCallerCount }
        let shown = firstChange {
            _ = list.listState
            return 0
        }
        let joining = Task { try await list.loadFirstPage() }
        #expect(try await second.wait() == 2)
        // The second caller joined the page in flight: the state did not change, and its observers heard nothing.
        #expect(!shown.isOpen)
        try await transport.waitForRequests(1)
        let answered = firstChange { list.waitingCallerCount }
        transport.answer(0, .success(HTTPResponse(statusCode: 200, headers: [:], body: envelope(items(0..<10)))))
        #expect(try await answered.wait() == 0)
        _ = try await load.value
        _ = try await joining.value
        #expect(transport.requestCount == 1)
    }

    @Test func aResourcesStreamsAreTrackedAsTheyRegisterAndGo() async throws {
        let resource = Resource<RemotePost>(state: .available(Post(id: "1", title: "Shown")))
        let registered = firstChange { resource.observerCount }
        var stream: AsyncStream<ResourceState<Post>>? = resource.states
        // Registered before `states` returns: the change was reported in the call.
        #expect(registered.isOpen)
        #expect(resource.observerCount == 1)
        let gone = firstChange { resource.observerCount }
        #expect(stream != nil)
        stream = nil
        // Dropping the stream unregisters it at once.
        #expect(gone.isOpen)
        #expect(resource.observerCount == 0)
    }

    /// A view that shows the state is not told of callers or streams, nor one that shows the counts of a state
    /// change.
    @Test func theCountsAndTheStateAreTrackedApart() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([Post(id: "1", title: "Stored")], into: "posts")
        let resource = Resource<RemotePost>(session: makeSession(backend))
        let counts = firstChange { resource.observerCount }
        let state = firstChange {
            _ = resource.state
            return 0
        }
        let stream = resource.states
        #expect(counts.isOpen)
        #expect(!state.isOpen)
        let streams = firstChange { resource.observerCount }
        _ = try await resource.read("1")
        #expect(state.isOpen)
        #expect(!streams.isOpen)
        _ = stream
    }
}
