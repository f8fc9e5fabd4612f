import Dispatch
import ResourceKit
import ResourceKitTesting
import Testing

/// The signal the tests wait on instead of polling.
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

    @Test func aWaitThatNeverSeesItsConditionFailsWithWhatItWaitedForAndSaw() async throws {
        let value = Watched(1)
        do {
            try await Changes.wait("the value is 2", timeout: .milliseconds(50), seen: { "\(value.value)" }) {
                value.value == 2
            }
            Issue.record("the wait returned")
        } catch {
            #expect(error.description == "waited 0.05 seconds for the value is 2; saw 1")
        }
    }

    @Test func aCancelledWaitEndsAtOnce() async throws {
        let waiter = Task {
            try await Changes.wait("nothing", timeout: .seconds(3_600)) { false }
        }
        waiter.cancel()
        await #expect(throws: ChangeTimeout.self) { try await waiter.value }
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
