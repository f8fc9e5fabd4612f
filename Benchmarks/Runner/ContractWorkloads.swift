import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitTesting
import Synchronization

/// The costs the operation core promises to keep low: delivering one change to many observers without
/// blocking `state`, and paginating with observers attached.
extension InProcessWorkloads {
    /// One change yielded to 10,000 observers, and the longest a `state` read waits meanwhile.
    func delivery() async throws -> Report {
        var report = Report()
        let observers = max(10, Int(10_000 * scale))
        let body = try JSONEncoder().encode(Row(id: 1, n: 2))
        var total: [Double] = []
        var longestRead: [Double] = []
        var parkedRead: [Double] = []
        var parkedReceived: [Double] = []
        for round in 0..<(rounds + warmup) {
            // Every consumer waits before the change: each must be woken. The read's time, and the time until every
            // consumer has the new state.
            let (read, received) = try await deliveryToWaitingConsumers(observers: observers, body: body)
            if round >= warmup {
                parkedRead.append(read * 1000)
                parkedReceived.append(received * 1000)
            }
        }
        for round in 0..<(rounds + warmup) {
            let stub = StubTransport()
            stub.stub(.get, "/row", body: body)
            let resource = Resource<RemoteRow>(
                session: NetworkSession(baseURL: "http://bench.local", transport: stub),
                state: .available(Row(id: 1, n: 1)))
            let streams = (0..<observers).map { _ in resource.states }
            let consumers = streams.map { stream in Task { for await _ in stream {} } }
            let stop = Locked(false)
            let reader = Task.detached {
                var longest = 0.0
                while !stop.withLock({ $0 }) {
                    let start = ContinuousClock.now
                    _ = resource.state
                    let waited = ContinuousClock.now - start
                    longest = max(longest, Double(waited.components.attoseconds) / 1e12)
                }
                return longest
            }
            // The read returns after its change was handed to every observer.
            let elapsed = try await seconds { try await resource.read() }
            stop.withLock { $0 = true }
            let longest = await reader.value
            for consumer in consumers { consumer.cancel() }
            for consumer in consumers { await consumer.value }
            if round >= warmup {
                total.append(elapsed * 1000)
                longestRead.append(longest)
            }
        }
        let workload = "one change to \(observers) observers"
        report.add(Measurement(workload: workload, variant: "read incl. delivery", unit: "ms", samples: total))
        report.add(Measurement(workload: workload, variant: "longest state read", unit: "µs", samples: longestRead))
        report.add(Measurement(workload: workload, variant: "read, all waiting", unit: "ms", samples: parkedRead))
        report.add(
            Measurement(workload: workload, variant: "until all have it", unit: "ms", samples: parkedReceived))
        return report
    }

    /// One read of a resource whose `observers` consumers all wait for a change: how long the read takes, and how
    /// long until every consumer has read the new value.
    private func deliveryToWaitingConsumers(observers: Int, body: Data) async throws -> (Double, Double) {
        let stub = StubTransport()
        stub.stub(.get, "/row", body: body)
        let resource = Resource<RemoteRow>(
            session: NetworkSession(baseURL: "http://bench.local", transport: stub), state: .available(Row(id: 1, n: 1))
        )
        let target = ResourceState<Row>.available(Row(id: 1, n: 2))
        let started = Tally()
        let streams = (0..<observers).map { _ in resource.states }
        let consumers = streams.map { stream in
            Task {
                for await state in stream {
                    if state == target { return }
                    started.add()
                }
            }
        }
        // Each consumer has read the first state; a moment more, and each waits for the next.
        while started.value < observers { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        try await resource.read()
        let read = ContinuousClock.now - start
        for consumer in consumers { await consumer.value }
        let received = ContinuousClock.now - start
        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        return (seconds(read), seconds(received))
    }

    /// Pagination with an observer attached: a consumer that reads every change, or a `.latest` stream that
    /// nobody reads.
    func paginationWithObservers() async throws -> Report {
        var report = Report()
        let pageCount = max(20, Int(1000 * scale))
        let window = pageCount / 10
        let server = PageServer(pageCount: pageCount, pageSize: 100)
        let payload = Double(pageCount * 100 * MemoryLayout<Row>.stride)
        for variant in ["states consumer", "unread .latest stream"] {
            var ratios: [Double] = []
            var peaks: [Double] = []
            // Where the consumer's peak comes from: the heap over the items loaded so far, in the second half of
            // the pages, by how many pages the consumer had still to read when the page was loaded (0, 1, 2 or
            // more).
            var peaksByLag: [[Double]] = [[], [], []]
            for round in 0..<(rounds + warmup) {
                let baseline = heapBytes() ?? 0
                var highest = baseline
                var highestByLag: [Double?] = [nil, nil, nil]
                let list = ListResource<RemoteRows>(
                    session: NetworkSession(baseURL: "http://bench.local", transport: server), request: ())
                let stream = variant == "states consumer" ? list.states : list.states(buffering: .latest)
                let pagesRead = Locked(0)
                let consumer: Task<Void, Never>? =
                    variant == "states consumer"
                    ? Task { for await state in stream { pagesRead.withLock { $0 = state.pagination.pagesLoaded } } }
                    : nil
                var times: [Double] = []
                for page in 1...pageCount {
                    times.append(try await seconds { try await list.loadNextPage() })
                    // Asked before the heap is: the consumer may read on meanwhile, and so let go of older states,
                    // but no newer state comes, so it is at most this far behind when the heap is read.
                    let lag = page - pagesRead.withLock { $0 }
                    guard let now = heapBytes() else { continue }
                    highest = max(highest, now)
                    guard consumer != nil, page > pageCount / 2 else { continue }
                    let ratio = (now - baseline) / Double(page * 100 * MemoryLayout<Row>.stride)
                    highestByLag[min(lag, 2)] = max(highestByLag[min(lag, 2)] ?? ratio, ratio)
                }
                consumer?.cancel()
                await consumer?.value
                guard list.items.count == pageCount * 100 else {
                    throw BenchmarkError("pagination loaded \(list.items.count) items")
                }
                if round >= warmup {
                    let first = times.prefix(window).reduce(0, +)
                    let last = times.suffix(window).reduce(0, +)
                    ratios.append(last / first)
                    peaks.append((highest - baseline) / payload)
                    for (lag, highest) in highestByLag.enumerated() {
                        if let highest { peaksByLag[lag].append(highest) }
                    }
                }
                withExtendedLifetime(stream) {}
            }
            let workload = "pagination with \(variant)"
            report.add(
                Measurement(workload: workload, variant: "last/first \(window) pages", unit: "×", samples: ratios))
            report.add(Measurement(workload: workload, variant: "peak heap / payload", unit: "×", samples: peaks))
            guard variant == "states consumer" else { continue }
            // A lag that no round saw has no row (a short run may never fall two pages behind).
            for (lag, name) in ["caught up", "1 page behind", "2+ pages behind"].enumerated()
            where !peaksByLag[lag].isEmpty {
                report.add(
                    Measurement(workload: workload, variant: "heap, \(name)", unit: "×", samples: peaksByLag[lag]))
            }
        }
        report.notes.append(
            "pagination with a states consumer: every change is delivered as a [Item] value, so each state the "
                + "consumer has not read holds the items as they were, and the next page is appended to a copy; "
                + "`heap, …` rows: the heap over the items loaded so far, second half of the pages, by the "
                + "consumer's lag when the page was loaded")
        return report
    }
}

/// A count shared by a workload's tasks.
final class Tally: Sendable {
    private let storage = Atomic<Int>(0)
    var value: Int { storage.load(ordering: .acquiring) }
    func add() { storage.add(1, ordering: .acquiringAndReleasing) }
}
