import Dispatch
import ResourceKitTesting
import TestSupport
import Testing

@testable import ResourceKitHTTP

/// The one multicast stream of the package: every stream gets an owner's changes in the order the owner made
/// them, from any thread; a stream whose reader stops is unregistered; a finished owner ends its streams.
@Suite struct SubscribersTests {
    struct Owner {
        var value = 0
        var streams = Subscribers<Int>()
    }

    @Test func everyStreamGetsTheChangesInTheOrderTheyWereMadeFromEveryThread() async throws {
        let owner = Locked(Owner())
        let streams = (0..<3).map { _ in owner.stream(\.streams) { owner in (owner.value, false) } }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<250 {
                        owner.withLock { owner in
                            owner.value += 1
                            owner.streams.yield(owner.value)
                        }
                    }
                }
            }
        }
        let finished = owner.withLock { $0.streams.removeAll() }
        for continuation in finished { continuation.finish() }
        for stream in streams {
            var seen: [Int] = []
            for await value in stream { seen.append(value) }
            // What the stream started from, then each change once, in the order the owner made them.
            #expect(seen == Array(0...1_000))
        }
    }

    /// An owner nobody watches builds nothing for a change: the element is made only when a stream is
    /// registered, once for all of them.
    @Test func theElementIsMadeOnlyWhenAStreamListensAndOnceForAll() async throws {
        let owner = Locked(Owner())
        let made = Locked(0)
        func change() {
            owner.withLock { owner in
                owner.value += 1
                owner.streams.yield(
                    made.withLock { made in
                        made += 1
                        return owner.value
                    })
            }
        }
        change()
        #expect(made.withLock { $0 } == 0)
        let streams = (0..<2).map { _ in owner.stream(\.streams) }
        change()
        #expect(made.withLock { $0 } == 1)
        for continuation in owner.withLock({ $0.streams.removeAll() }) { continuation.finish() }
        for stream in streams {
            var seen: [Int] = []
            for await value in stream { seen.append(value) }
            #expect(seen == [2])
        }
    }

    @Test func aStreamWhoseReaderStopsIsUnregistered() async throws {
        let owner = Locked(Owner())
        let stream = owner.stream(\.streams) { owner in (owner.value, false) }
        let started = AsyncLatch()
        let reader = Task {
            for await _ in stream { started.open() }
        }
        try await started.wait()
        #expect(!owner.withLock { $0.streams.isEmpty })
        reader.cancel()
        await reader.value
        // Its end is recorded without the owner's lock; the owner's next change drops it.
        owner.withLock { owner in
            owner.value += 1
            owner.streams.yield(owner.value)
        }
        #expect(owner.withLock { $0.streams.isEmpty })
    }

    /// A stream's termination can run inside the runtime's lock of its reading task (a cancellation), and a
    /// yield under the owner's lock takes that runtime lock to wake the reader: a termination that took the
    /// owner's lock deadlocked against a yield (found under the thread sanitizer, a reader cancelled while the
    /// store told its membership watchers of a change). Here a stream ends on another thread while the owner
    /// is locked: it must end without waiting for the lock.
    @Test(.offThePool) func aStreamsEndNeverWaitsForItsOwnersLock() async throws {
        let owner = Locked(Owner())
        let stream = owner.stream(\.streams)
        let continuation = try #require(owner.withLock { $0.streams.removeAll() }.first)
        let ended = DispatchSemaphore(value: 0)
        let endedWhileLocked = owner.withLock { _ in
            DispatchQueue.global().async {
                continuation.finish()
                ended.signal()
            }
            // Bounds the failure only: a termination that waits for the lock never signals while it is held.
            return ended.wait(timeout: .now() + .seconds(30)) == .success
        }
        #expect(endedWhileLocked, "the stream's end waited for its owner's lock")
        if !endedWhileLocked { ended.wait() }
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test func aStreamMadeAfterTheEndGetsTheLastValueAndEnds() async {
        let owner = Locked(Owner(value: 7))
        let stream = owner.stream(\.streams) { owner in (owner.value, true) }
        var seen: [Int] = []
        for await value in stream { seen.append(value) }
        #expect(seen == [7])
        #expect(owner.withLock { $0.streams.isEmpty })
    }
}
