import BenchmarkFixtures
import Foundation
import ResourceKit
import Synchronization

/// An integer shared by a workload's operations and tasks.
final class Tally: Sendable {
    private let storage = Atomic<Int>(0)
    var value: Int { storage.load(ordering: .acquiring) }
    @discardableResult
    func add(_ amount: Int = 1) -> Int { storage.add(amount, ordering: .acquiringAndReleasing).newValue }
}

private let baseURL = "http://allocations.local"

/// The workloads and their budgets.
///
/// Each budget is the count its workload measured: every count below was the same in each of 10 process runs
/// × 30 runs × 100 operations, also with a second instance and a busy loop competing for the 2 cores
/// (release, Swift 6.3.1, glibc 2.36, 2026-12-01). A figure is the median of 5 runs of 100 operations, so
/// background noise (Dispatch spawning a thread now and then) moves one run by a fraction, never the median,
/// and one new allocation per operation fails. A change that needs more raises the budget here, visibly, in
/// the same commit, with the new measurement; one that needs fewer lowers it. For scale: the instant
/// transport plus `JSONDecoder` decoding `Row` alone make 12.
let workloads: [Workload] = [
    // Measured 42 (60 before the session parsed its base URL and merged its default headers once, and the
    // deadline race stopped allocating closures). The deadline accounts for 10, as for `send`; the rest: the
    // operation's task (Task.immediate, 4 in the runtime), the continuation, building the URLRequest,
    // decoding, the machine's bookkeeping.
    // A read's async frames sit close to its task's first 984-byte allocator slab: code inlined into them (a
    // log or diagnostic event built in `perform`) takes a second slab, one more allocation per read, page and
    // update, whether or not anyone logs or listens. Event building stays in `@inline(never)` functions.
    // Measured 40 since a lock holds its mutex in its own object (41 before: the deadline race's lock made two).
    Workload(name: "Resource.read, instant transport", budget: 40) {
        let session = NetworkSession(baseURL: baseURL, transport: try InstantTransport(Row(id: 1, n: 1)))
        let resource = Resource<RemoteRow>(session: session)
        return Prepared(
            operation: { try await resource.read() },
            finish: {
                guard resource.value == Row(id: 1, n: 1) else { throw WorkloadError("the read left \(resource.state)") }
            })
    },
    // Measured 42.01–42.07: the read's 42, and nothing per event. A read of the URL the last call read names its
    // request with the same subject, so no new one is made; records carry no text and no reference counts, and
    // reuse the array the consumer gave back. The fraction is the consumer's: the flush timer and its batches,
    // once per 10 ms.
    // Measured 40.01 since a lock holds its mutex in its own object.
    Workload(name: "Resource.read, instant transport, one diagnostics listener", budget: 41) {
        let session = NetworkSession(baseURL: baseURL, transport: try InstantTransport(Row(id: 1, n: 1)))
        let resource = Resource<RemoteRow>(session: session)
        let events = session.diagnostics(bufferingNewest: 1_000_000)
        let received = Tally()
        let listener = Task { for await _ in events { received.add() } }
        return Prepared(
            operation: { try await resource.read() },
            finish: {
                listener.cancel()
                guard resource.value == Row(id: 1, n: 1) else { throw WorkloadError("the read left \(resource.state)") }
            })
    },
    // Measured 27 (42 before) with the default 60 s deadline: it adds 10 per request (the race and its lock,
    // the abandonable transport task and its closure) to the 17 below; the race is its own scheduler entry
    // and holds what stops the work as a value, so neither costs a closure any more.
    // Measured 26 since a lock holds its mutex in its own object: the race's lock is one allocation, not two.
    Workload(name: "NetworkSession.send, small JSON struct", budget: 26) {
        let session = NetworkSession(baseURL: baseURL, transport: try InstantTransport(Row(id: 1, n: 1)))
        let endpoint = Endpoint(.get, "row")
        return Prepared(operation: { _ = try await session.send(endpoint, as: Row.self) })
    },
    // Measured 17 (30 before): no deadline machinery. 12 of them are the instant transport and `JSONDecoder`;
    // building the request from the base URL and headers worked out when the session was made makes most of
    // the other 5 (the URL, the `URLRequest` and its header dictionary).
    Workload(name: "NetworkSession.send, small JSON struct, no time limit", budget: 17) {
        let session = NetworkSession(
            baseURL: baseURL, transport: try InstantTransport(Row(id: 1, n: 1)), timeLimit: nil)
        let endpoint = Endpoint(.get, "row")
        return Prepared(operation: { _ = try await session.send(endpoint, as: Row.self) })
    },
    // Measured 266 since the page path is specialized in the client (267 before; 297 before requests were built
    // from the base URL parsed once, with query items that need no escape passed through as they are; 266
    // before a response could carry a streamed body: that change, measured alone, adds one on this path and
    // none on the read's or send's). Each further item costs 4
    // in JSONDecoder (its keyed container's dictionary and box, the unwrapped value and its existential box);
    // the rest grows the decoded array as it fills.
    // Measured 265 since a lock holds its mutex in its own object.
    Workload(name: "ListResource page of 50 (refresh)", budget: 265) {
        let rows = (0..<50).map { Row(id: $0, n: $0) }
        let session = NetworkSession(baseURL: baseURL, transport: try InstantTransport(PageBody(items: rows)))
        let list = ListResource<RemoteRows>(session: session, request: ())
        return Prepared(
            operation: { try await list.refresh() },
            finish: {
                guard list.items == rows else { throw WorkloadError("the list holds \(list.items.count) items") }
            })
    },
    // Measured 76 since the store's fan-out changes (a holder's weak reference in a shared box, the lists news
    // reaches gathered in one array made to size, a list's link held by reference), 80 before them (96 before
    // requests were built from the base URL parsed once). Before that change a bare
    // `Resource.update` measured 88, in a store with no list 91, reaching 1 list 92: a list the update reaches
    // costs no allocation of its own (only the news array grows now and then).
    // Measured 75 since a lock holds its mutex in its own object.
    Workload(name: "store update reaching 10 lists", budget: 75) {
        let store = ResourceStore(session: NetworkSession(baseURL: baseURL, transport: try StoreServer(listCount: 10)))
        let lists = (0..<10).map { store.list(RemoteRowLists.self, request: $0) }
        for list in lists { try await list.loadFirstPage() }
        let detail = store.resource(RemoteRowByID.self, id: 1)
        // Every update changes the row (n alternates between 1 and 2), so every list really replaces it.
        let turn = Tally()
        return Prepared(
            operation: { try await detail.update(Row(id: 1, n: 1 + turn.add() % 2)) },
            finish: {
                let last = Row(id: 1, n: 1 + turn.value % 2)
                // Also keeps the store alive while counting: its resources and lists hold it weakly, and an update
                // reaches no list once it is gone.
                guard store.liveCount == 11, lists.allSatisfy({ $0.items.first == last }) else {
                    throw WorkloadError("an update did not reach every list: \(lists.map { $0.items.first })")
                }
            })
    },
    // Measured 2 per change: the log node the streams share and the list of parked streams to resume (101
    // when each stream was an `AsyncStream` with a buffer of its own: one per observer).
    Workload(name: "state change delivered to 100 observers", budget: 2) {
        try await deliveryToObservers(consumed: true)
    },
    // Measured 0 per change: a `.latest` stream reads the feed's newest state when asked, and holds nothing.
    Workload(name: "state change delivered to 100 observers, unread .latest streams", budget: 0) {
        try await deliveryToObservers(consumed: false)
    },
]

/// One state change to 100 observers: a read (two changes, `loading` and `available`) of a resource with 100
/// `states` streams, less the same read of a resource with none, halved.
///
/// Consumed: a task per stream reads every state. The tasks run on a ``ManualExecutor`` drained after each
/// read, so the count holds what the library does (a log node, the parked streams woken), and not the global
/// executor's wake-ups, whose allocations depend on thread timing. Unread: `.latest` streams.
private func deliveryToObservers(consumed: Bool) async throws -> Prepared {
    let observers = 100
    let transport = try InstantTransport(Row(id: 1, n: 1))
    let watched = Resource<RemoteRow>(session: NetworkSession(baseURL: baseURL, transport: transport))
    let alone = Resource<RemoteRow>(session: NetworkSession(baseURL: baseURL, transport: transport))
    let executor = ManualExecutor(capacity: observers)
    let seen = Tally()
    let expected = Tally()
    let tasks: [Task<Void, Never>] =
        consumed
        ? (0..<observers).map { _ in
            let stream = watched.states
            return Task(executorPreference: executor) {
                for await _ in stream { seen.add() }
            }
        } : []
    let streams = consumed ? [] : (0..<observers).map { _ in watched.states(buffering: .latest) }
    if consumed {
        executor.drain()
        expected.add(observers)
    }
    let operation: @Sendable () async throws -> Void = {
        try await watched.read()
        guard consumed else { return }
        executor.drain()
        expected.add(2 * observers)
    }
    return Prepared(
        operation: operation, baseline: { try await alone.read() }, perOperation: 2,
        finish: {
            defer {
                for task in tasks { task.cancel() }
                executor.drain()
            }
            guard seen.value == expected.value, watched.observerCount == observers,
                consumed || streams.count == observers
            else {
                throw WorkloadError(
                    "\(watched.observerCount) observers saw \(seen.value) states of \(expected.value)")
            }
        })
}

/// Runs the jobs of the tasks that prefer it only when drained, on the draining thread, and takes jobs
/// without allocating (up to its capacity).
final class ManualExecutor: TaskExecutor {
    private let jobs: Mutex<[UnownedJob]>

    init(capacity: Int) {
        var jobs: [UnownedJob] = []
        jobs.reserveCapacity(capacity)
        self.jobs = Mutex(jobs)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs every job, including those that running them enqueues, until none is left.
    func drain() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
