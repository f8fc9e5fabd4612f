import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// `states` streams against a reference: the list of every state the resource took. Streams open, read, drop and
/// get cancelled at seeded points; an `.everyChange` stream reads exactly the states from the one it started at,
/// a `.latest` stream reads the newest state each time (never one twice, never an older one), and `observerCount`
/// counts the streams still open.
@Suite(.timeLimit(.minutes(2))) struct StateStreamModelTests {
    typealias State = ResourceState<Post>

    /// The resource, its backend, and every state it took, in order.
    private final class Subject: @unchecked Sendable {
        // Used by one task at a time: the test's.
        let backend = InMemoryBackend(basePath: "/api")
        var resource: Resource<RemotePost>?
        var states: [State] = [.idle]
        var version = 0

        init() {
            backend.addCollection("posts")
            resource = Resource<RemotePost>(
                session: NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil))
        }

        /// A read of a new version: `loading`, then `available`.
        func change() async throws {
            let previous = states.last?.value
            version += 1
            let post = Post(id: "42", title: "v\(version)")
            try backend.seed([post], into: "posts")
            _ = try await resource?.read("42")
            states += [.loading(previous: previous), .available(post)]
        }
    }

    /// A stream the schedule reads from one task, with where it is in the reference.
    private struct Reader {
        var iterator: AsyncStream<State>.Iterator
        let everyChange: Bool
        /// The index in the reference of the state it read last, or of the one before its first.
        var position: Int
    }

    @Test(arguments: ScheduleSettings.seeds(inAPlainRun: 40))
    func streamsReadWhatTheReferenceSaysWhateverTheSchedule(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let subject = Subject()
        var readers: [Reader] = []
        for _ in 0..<120 {
            let resource = try #require(subject.resource)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                try await subject.change()
            case 3..<5:
                let everyChange = Bool.random(using: &random)
                let stream = everyChange ? resource.states : resource.states(buffering: .latest)
                readers.append(
                    Reader(
                        iterator: stream.makeAsyncIterator(), everyChange: everyChange,
                        position: subject.states.count - 2))
            case 5..<9 where !readers.isEmpty:
                let k = Int.random(in: 0..<readers.count, using: &random)
                // Only what waits: a read that would wait is not asked for.
                let last = subject.states.count - 1
                var reads = Int.random(in: 1...4, using: &random)
                while reads > 0, readers[k].position < last {
                    let state = await readers[k].iterator.next()
                    let expected = readers[k].everyChange ? readers[k].position + 1 : last
                    #expect(state == subject.states[expected], "seed \(seed): reader \(k) at \(readers[k].position)")
                    readers[k].position = expected
                    reads -= 1
                }
            case 9 where !readers.isEmpty:
                readers.remove(at: Int.random(in: 0..<readers.count, using: &random))
            default:
                break
            }
            #expect(resource.observerCount == readers.count, "seed \(seed)")
        }
        // Freed: each stream reads what it has not, then ends.
        subject.resource = nil
        let last = subject.states.count - 1
        for k in readers.indices {
            var read: [State] = []
            // Bounded: a stream that never ends fails here instead of hanging.
            while read.count <= last + 1, let state = await readers[k].iterator.next() { read.append(state) }
            let expected =
                readers[k].position == last
                ? []
                : readers[k].everyChange ? Array(subject.states[(readers[k].position + 1)...]) : [subject.states[last]]
            #expect(read == expected, "seed \(seed): reader \(k)")
        }
    }

    /// Consumers in tasks of their own, reading while the resource changes, some cancelled at seeded points: each
    /// `.everyChange` consumer reads the reference from the start, a `.latest` one a rising part of it ending at the
    /// last state (each state once, none older than one before it); a cancelled one a prefix of that; and each
    /// stream leaves `observerCount` as its consumer ends.
    // Each schedule runs 40 tasks.
    @Test(arguments: ScheduleSettings.seeds(inAPlainRun: 20))
    func consumersInTheirOwnTasksReadTheReferenceAndCancelledOnesLeave(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let subject = Subject()
        let resource = try #require(subject.resource)
        let changes = 30
        let final = State.available(Post(id: "42", title: "v\(changes)"))
        let consumers = (0..<40).map { index -> (everyChange: Bool, task: Task<[State], Never>) in
            let everyChange = index % 2 == 0
            let stream = everyChange ? resource.states : resource.states(buffering: .latest)
            let task = Task {
                var read: [State] = []
                for await state in stream {
                    read.append(state)
                    // Bounded: a stream that repeats itself fails instead of hanging.
                    if state == final || read.count > 2 * changes + 1 { break }
                }
                return read
            }
            return (everyChange, task)
        }
        #expect(resource.observerCount == consumers.count)
        var cancelled: Set<Int> = []
        for _ in 0..<changes {
            try await subject.change()
            if Int.random(in: 0..<4, using: &random) == 0 {
                let k = Int.random(in: 0..<consumers.count, using: &random)
                consumers[k].task.cancel()
                cancelled.insert(k)
            }
        }
        let reference = subject.states
        for (k, consumer) in consumers.enumerated() {
            let read = await consumer.task.value
            if consumer.everyChange {
                let expected = cancelled.contains(k) ? Array(reference.prefix(read.count)) : reference
                #expect(read == expected, "seed \(seed): consumer \(k)")
            } else {
                let positions = read.map { state in reference.lastIndex(of: state) ?? -1 }
                #expect(!positions.contains(-1), "seed \(seed): consumer \(k) read a state the resource never took")
                #expect(positions == positions.sorted() && Set(positions).count == positions.count, "seed \(seed)")
                if !cancelled.contains(k) { #expect(read.last == final, "seed \(seed): consumer \(k)") }
            }
        }
        try await waitUntil("every consumer has ended") { resource.observerCount == 0 }
    }
}

extension ScheduleSettings {
    /// `count` of the seeds in a plain run; every one when `RESOURCEKIT_SCHEDULES` or `RESOURCEKIT_SEED` asks.
    static func seeds(inAPlainRun count: Int) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        let asked = environment["RESOURCEKIT_SCHEDULES"] != nil || environment["RESOURCEKIT_SEED"] != nil
        return Array(seeds.prefix(asked ? .max : count))
    }
}
