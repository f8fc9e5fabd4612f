import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Polling and revalidation on a manual clock: exact request counts over time.
@Suite(.timeLimit(.minutes(1))) struct PollingTests {
    let clock = ManualClock()

    /// Waits for the poller's next wait of `interval`, then moves time past it.
    func tick(_ interval: Duration = .seconds(10)) async throws {
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(interval) }
        clock.advance(by: interval)
    }

    /// A tick whose wake the poller has handled, its poll included: it waits again. A change of who observes
    /// made after it cannot reach that wake (with `tick()` alone, the poller may look after the change).
    func settledTick(_ interval: Duration = .seconds(10)) async throws {
        try await tick(interval)
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0.contains(interval) }
    }

    func reads(_ backend: InMemoryBackend) -> Int { backend.requestLog.count }

    @Test func pollsEveryIntervalWhileObservedAndNeverWhileNot() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemotePost.self, id: "42")
        let polling = Task { await post.poll("42", every: .seconds(10), jitter: .none) }
        defer { polling.cancel() }
        // Nobody observes: ticks send nothing.
        for _ in 0..<3 { try await settledTick() }
        #expect(reads(backend) == 0)
        // Observed: one read per tick.
        let states = post.recordStates()
        for expected in 1...3 {
            try await settledTick()
            #expect(reads(backend) == expected)
        }
        #expect(post.state == .available(storePosts[1]))
        // Observed no more: nothing again.
        states.stop()
        try await waitUntil("unobserved") { post.observerCount == 0 }
        for _ in 0..<3 { try await settledTick() }
        #expect(reads(backend) == 3)
        // Observed again: polling goes on.
        let again = post.recordStates()
        try await settledTick()
        #expect(reads(backend) == 4)
        again.stop()
        // Cancelled: no more waits, no more reads.
        polling.cancel()
        await polling.value
        #expect(reads(backend) == 4)
    }

    @Test func aTickDuringAReadSendsNothingAndAFreshValueNeedsNoPoll() async throws {
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: nil, clock: clock)
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let states = post.recordStates()
        defer { states.stop() }
        let polling = Task { await post.poll("42", every: .seconds(10), jitter: .none) }
        defer { polling.cancel() }
        // A read of the app's own is in flight when the tick comes: the tick sends nothing.
        let reading = Task { try await post.read("42") }
        try await transport.waitForRequests(1)
        try await tick()
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(10)) }
        #expect(transport.requestCount == 1)
        transport.answer(0, .success(postResponse(storePosts[1])))
        _ = try await reading.value
        // Read 5 s before the next tick: still fresh by the interval, so that tick sends nothing either…
        clock.advance(by: .seconds(5))
        let app = Task { try await post.read("42") }
        try await transport.waitForRequests(2)
        transport.answer(1, .success(postResponse(storePosts[1])))
        _ = try await app.value
        clock.advance(by: .seconds(5))
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(10)) }
        #expect(transport.requestCount == 2)
        // …and the one after reads.
        try await tick()
        try await transport.waitForRequests(3)
        transport.answer(2, .success(postResponse(storePosts[1])))
    }

    @Test func jitterLengthensTheIntervalByUpToATenth() async throws {
        let (store, _) = try makeStore(clock: clock)
        let post = store.resource(RemotePost.self, id: "42")
        let polling = Task { await post.poll("42", every: .seconds(10), jitter: .full(using: { 1 })) }
        defer { polling.cancel() }
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(11)) }
    }

    @Test func anIntervalThatIsNotPositiveNeverPolls() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemotePost.self, id: "42")
        let states = post.recordStates()
        defer { states.stop() }
        await post.poll("42", every: .zero)
        await post.poll("42", every: .seconds(-1))
        #expect(reads(backend) == 0)
    }

    @Test func aListPollsItsFirstPageWhileObserved() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let polling = Task { await feed.poll(every: .seconds(10), jitter: .none) }
        defer { polling.cancel() }
        // Settled: the poller has handled this wake, unobserved, before the list is observed. With `tick()`
        // alone, it could look after `recordStates()`, poll at once, and the second tick poll again before
        // the first wait below reads one request.
        try await settledTick()
        #expect(reads(backend) == 0)
        let states = feed.recordStates()
        defer { states.stop() }
        try await tick()
        try await waitUntil("first poll") { reads(backend) == 1 && feed.items.count == 3 }
        try await tick()
        try await waitUntil("second poll") { reads(backend) == 2 }
    }

    @Test func revalidateObservedReadsWhatIsObservedAndStaleOnly() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let cached = store.resource(RemoteCachedPost.self, id: "41")
        let unobserved = store.resource(RemoteCachedPost.self, id: "43")
        let feed = store.list(RemoteFeed.self, request: "latest")
        try await cached.read("41")
        try await unobserved.read("43")
        try await feed.refresh()
        let cachedStates = cached.recordStates()
        let feedStates = feed.recordStates()
        defer {
            cachedStates.stop()
            feedStates.stop()
        }
        backend.clearLog()
        // Within `maxAge` (5 s) the observed resource is fresh: only the observed list reads.
        await store.revalidateObserved()
        #expect(backend.requestLog.map(\.path) == ["/api/posts"])
        // Stale, and the list observed no more: only the resource reads. (With the list still observed, the
        // two run at once and the list's page may bring post 41 first, freshening it: then it reads nothing,
        // rightly.)
        feedStates.stop()
        try await waitUntil("the list is unobserved") { feed.observerCount == 0 }
        clock.advance(by: .seconds(5))
        backend.clearLog()
        await store.revalidateObserved()
        #expect(backend.requestLog.map(\.path) == ["/api/posts/41"])
    }

    @Test func revalidateObservedRunsForEachSignal() async throws {
        let (store, backend) = try makeStore(clock: clock)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let states = feed.recordStates()
        defer { states.stop() }
        let (signals, signal) = AsyncStream.makeStream(of: Void.self)
        let revalidating = Task { await store.revalidateObserved(whenever: signals) }
        signal.yield()
        // The waits only stop a hang: under the thread sanitizer every suite shares two threads for 60-75 s,
        // and the task started here can wait for one most of that time.
        try await waitUntil("first") { backend.requestLog.count == 1 }
        signal.yield()
        try await waitUntil("second") { backend.requestLog.count == 2 }
        signal.finish()
        await revalidating.value
        #expect(backend.requestLog.count == 2)
    }
}
