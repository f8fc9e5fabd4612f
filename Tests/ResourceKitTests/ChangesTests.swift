import Dispatch
import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The testing kit's `Changes`, which the tests wait on instead of polling: a raise from a test double, or a
/// change the library publishes through Observation.
@Suite struct ChangesTests {
    @Test func aWaitEndsWhenAWatchedValueChangesInAnotherTask() async throws {
        let value = Watched(0)
        let latch = AsyncLatch()
        let waiter = Task {
            try await waitUntil("the value is 3") { value.value == 3 }
        }
        Task {
            try await latch.wait()
            for _ in 0..<3 { value.withLock { $0 += 1 } }
        }
        latch.open()
        try await waiter.value
        #expect(value.value == 3)
    }

    /// Nothing here raises `Changes`: the transport is silent, so only Observation of the resource's
    /// `waitingCallerCount` can end the wait.
    @Test func aWaitEndsOnWhatTheLibraryPublishesThroughObservation() async throws {
        let transport = SilentHeldTransport()
        let resource = Resource<RemotePost>(session: makeTimelessSession(transport))
        let callers = try await waitStarted("3 callers") { resource.waitingCallerCount == 3 }
        let reads = (0..<3).map { _ in Task { try await resource.read("1") } }
        try await callers.value
        transport.release.open()
        for read in reads { #expect(try await read.value == Post(id: "1", title: "Held")) }
        #expect(transport.count == 1)
        #expect(resource.waitingCallerCount == 0)
        // And on a stream's registration and its end.
        let streams = try await waitStarted("a stream") { resource.observerCount == 1 }
        let consumer = Task { for await _ in resource.states {} }
        try await streams.value
        let ended = try await waitStarted("no stream") { resource.observerCount == 0 }
        consumer.cancel()
        try await ended.value
        await consumer.value
    }

    /// The change comes between the condition's read and the moment Observation tracks it: the condition
    /// itself registers a stream after reading `observerCount`. Only the check made once the tracking is
    /// installed sees it; without that check the wait would hang to its timeout. (Run alone: in a parallel run,
    /// another test's raise may wake the wait too.)
    @Test func aChangeBetweenTheFirstReadAndTheTrackingIsNotMissed() async throws {
        let resource = Resource<RemotePost>(state: .available(Post(id: "1", title: "Shown")))
        let stream = Locked<AsyncStream<ResourceState<Post>>?>(nil)
        try await waitUntil("a stream") {
            let count = resource.observerCount
            stream.withLock { stream in
                if stream == nil { stream = resource.states }
            }
            return count == 1
        }
        #expect(resource.observerCount == 1)
        #expect(stream.withLock { $0 } != nil)
    }

    @Test func aWaitThatNeverSeesItsConditionFailsWithWhatItWaitedForAndSaw() async throws {
        let value = Watched(1)
        do {
            try await Changes.wait("the value is 2", timeout: .milliseconds(50), seen: { "\(value.value)" }) {
                value.value == 2
            }
            Issue.record("the wait returned")
        } catch {
            #expect(
                error
                    == WaitTimeout(
                        awaited: "the value is 2", reason: .timedOut, timeout: .milliseconds(50), seen: ["1"]))
        }
    }

    @Test func aCancelledWaitEndsAtOnce() async throws {
        let waiter = Task {
            try await Changes.wait("nothing", timeout: .seconds(3_600)) { false }
        }
        waiter.cancel()
        do {
            try await waiter.value
            Issue.record("the wait returned")
        } catch let error as WaitTimeout {
            #expect(error.reason == .cancelled)
        }
    }
}

/// A `waitUntil` in a task of its own, returned once it has checked its condition the first time: what it waits
/// for starts after that.
private func waitStarted(
    _ description: String, _ condition: @escaping @Sendable () -> Bool
) async throws -> Task<Void, any Error> {
    let checked = AsyncLatch()
    let wait = Task {
        try await waitUntil(description) {
            checked.open()
            return condition()
        }
    }
    try await checked.wait()
    return wait
}

/// A transport that holds every request until `release` opens, and raises nothing.
private final class SilentHeldTransport: HTTPTransport {
    let release = AsyncLatch()
    private let received = Locked(0)
    var count: Int { received.withLock { $0 } }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        received.withLock { $0 += 1 }
        do { try await release.wait() } catch { throw .cancelled }
        return HTTPResponse(statusCode: 200, headers: [:], body: Data(json(Post(id: "1", title: "Held")).utf8))
    }
}

/// The trait that keeps blocking tests off the cooperative pool.
@Suite struct OffThePoolTests {
    @Test(.offThePool) func aTestRunsOnADispatchQueueOfItsOwn() {
        let label = DispatchQueue.getSpecific(key: QueueExecutor.label)
        #expect(label == "aTestRunsOnADispatchQueueOfItsOwn()")
    }

    @Test(.offThePool) func anAsyncTestResumesOnItToo() async throws {
        try await Task.sleep(for: .milliseconds(1))
        let label = DispatchQueue.getSpecific(key: QueueExecutor.label)
        #expect(label == "anAsyncTestResumesOnItToo()")
    }

    @Test func withoutTheTraitATestRunsOnThePool() {
        let label = DispatchQueue.getSpecific(key: QueueExecutor.label)
        #expect(label == nil)
    }
}
