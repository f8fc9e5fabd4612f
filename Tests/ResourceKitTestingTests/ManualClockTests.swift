import ResourceKit
import ResourceKitTesting
import Testing

/// `ManualClock`'s sleepers, and waits for them that fail instead of hanging.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    let clock = ManualClock()

    /// Starts a sleep of one second on the clock, and returns once the clock lists it.
    func sleeper() async throws -> Task<Void, any Error> {
        let task = Task { [clock] in try await clock.sleep(for: .seconds(1)) }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        return task
    }

    /// Starts a wait for no sleepers, and returns once it is registered: its condition, evaluated when it
    /// registers, has seen the sleep still pending.
    func watcherForNoSleepers() async throws -> Task<[Duration], any Error> {
        let registered = AsyncLatch()
        let watcher = Task { [clock] in
            try await clock.waitForSleepers(timeout: .seconds(5)) { pending in
                if !pending.isEmpty { registered.open() }
                return pending.isEmpty
            }
        }
        try await registered.wait()
        return watcher
    }

    @Test func aCancelledSleepLeavesTheSleepersAndEndsAWaitForNone() async throws {
        let sleep = try await sleeper()
        let watcher = try await watcherForNoSleepers()
        sleep.cancel()
        #expect(clock.sleepers == [])
        #expect(try await watcher.value == [])
        await #expect(throws: CancellationError.self) { try await sleep.value }
        #expect(clock.requestedSleeps == [.seconds(1)])
    }

    @Test func aSleepWhoseDeadlineIsReachedLeavesTheSleepersAndEndsAWaitForNone() async throws {
        let sleep = try await sleeper()
        let watcher = try await watcherForNoSleepers()
        clock.advance(by: .seconds(1))
        #expect(clock.sleepers == [])
        #expect(try await watcher.value == [])
        try await sleep.value
    }

    @Test func aWaitForSleepersThatNeverComeFailsWithThePendingOnes() async throws {
        let sleep = try await sleeper()
        await #expect(throws: sleepersTimeout(.timedOut, .milliseconds(50), ["1.0 seconds"])) {
            try await clock.waitForSleepers(timeout: .milliseconds(50)) { $0.count == 2 }
        }
        sleep.cancel()
    }

    @Test func aCancelledWaitFailsAtOnceWithThePendingSleepers() async throws {
        let watcher = Task { [clock] in try await clock.waitForSleepers(timeout: .seconds(3600)) { $0.count == 1 } }
        watcher.cancel()
        await #expect(throws: sleepersTimeout(.cancelled, .seconds(3600), [])) {
            try await watcher.value
        }
    }

    @Test func aWaitThatNamesNoTimeoutIsTheTimedOneWithFiveSeconds() async throws {
        // The wait without a timeout returns when cancelled; the timed one fails, naming its timeout.
        let watcher = Task { [clock] in try await clock.waitForSleepers { $0.count == 1 } }
        watcher.cancel()
        await #expect(throws: sleepersTimeout(.cancelled, .seconds(5), [])) {
            try await watcher.value
        }
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aTimeoutThatIsNotPositiveFailsAtOnceUnlessTheConditionHolds(timeout: Duration) async throws {
        await #expect(throws: sleepersTimeout(.timedOut, timeout, [])) {
            try await clock.waitForSleepers(timeout: timeout) { $0.count == 1 }
        }
        #expect(try await clock.waitForSleepers(timeout: timeout) { $0.isEmpty } == [])
    }

    @Test func aHugeTimeoutNeitherTrapsNorOutlivesTheWait() async throws {
        let registered = AsyncLatch()
        let watcher = Task { [clock] in
            try await clock.waitForSleepers(timeout: .seconds(Int64.max)) { pending in
                if pending.isEmpty { registered.open() }
                return !pending.isEmpty
            }
        }
        try await registered.wait()
        let sleep = Task { [clock] in try await clock.sleep(for: .seconds(2)) }
        #expect(try await watcher.value == [.seconds(2)])
        sleep.cancel()
    }

    @Test func theTimeoutDescribesThePendingSleepers() {
        let timeout = sleepersTimeout(.timedOut, .seconds(5), ["1.0 seconds", "2.0 seconds"])
        #expect(
            timeout.description
                == "Timed out after 5.0 seconds waiting for the clock's sleepers; saw 2: [1.0 seconds, 2.0 seconds]"
        )
        #expect(
            sleepersTimeout(.cancelled, .seconds(5), []).description
                == "Cancelled while waiting for the clock's sleepers; saw 0: []")
    }

    /// The error a wait for the clock's sleepers ends with.
    private func sleepersTimeout(_ reason: WaitTimeout.Reason, _ timeout: Duration, _ seen: [String]) -> WaitTimeout {
        WaitTimeout(awaited: "the clock's sleepers", reason: reason, timeout: timeout, seen: seen)
    }
}
