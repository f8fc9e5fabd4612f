import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct RemoteRows: Listable {
    typealias Value = Row
    typealias Item = Row
    typealias ListResponse = PageEnvelope<Row>
    static let pagination = PageNumberPagination(pageSize: 100)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "rows") }
}

/// Serves pre-encoded pages by their `page` query parameter, so only ResourceKit's own cost is measured.
struct PageServer: HTTPTransport {
    let pages: [Data]

    init(pageCount: Int, pageSize: Int) {
        struct Body: Encodable {
            var page: Int
            var perPage: Int
            var totalItems: Int
            var totalPages: Int
            var items: [Row]
        }
        let encoder = JSONEncoder()
        pages = (0..<pageCount).map { index in
            let items = (0..<pageSize).map { Row(id: index * pageSize + $0, n: $0) }
            let body = Body(
                page: index + 1, perPage: pageSize, totalItems: pageCount * pageSize, totalPages: pageCount,
                items: items)
            return (try? encoder.encode(body)) ?? Data()
        }
    }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let query = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
        let page = Int(query.first { $0.name == "page" }?.value ?? "1") ?? 1
        guard pages.indices.contains(page - 1) else { return HTTPResponse(statusCode: 404) }
        return HTTPResponse(statusCode: 200, body: pages[page - 1], url: request.url)
    }
}

struct InProcessWorkloads: Sendable {
    let scale: Double
    let rounds: Int
    let warmup: Int

    func run() async throws -> Report {
        var report = Report()
        report.merge(try await overhead())
        report.merge(try await diagnostics())
        report.merge(try await coalescing())
        report.merge(try await fanOut())
        report.merge(try await delivery())
        report.merge(try await pagination())
        report.merge(try await listPages())
        report.merge(try await paginationWithObservers())
        report.merge(try await backendThroughput())
        report.merge(try await store())
        return report
    }

    static func profileReads(_ count: Int) async throws {
        let transport = InstantTransport(body: try JSONEncoder().encode(Row(id: 1, n: 1)))
        let resource = Resource<RemoteRow>(session: NetworkSession(baseURL: "http://bench.local", transport: transport))
        for _ in 0..<count { _ = try await resource.read() }
    }

    /// For profilers: only `NetworkSession.send` on an instant transport.
    static func profileSends(_ count: Int) async throws {
        let transport = InstantTransport(body: try JSONEncoder().encode(Row(id: 1, n: 1)))
        let session = NetworkSession(baseURL: "http://bench.local", transport: transport)
        let endpoint = Endpoint(.get, "row")
        for _ in 0..<count { _ = try await session.send(endpoint, as: Row.self) }
    }

    /// The library's own cost per request, on a transport that answers at once.
    func overhead() async throws -> Report {
        var report = Report()
        let requests = max(200, Int(20_000 * scale))
        let transport = InstantTransport(body: try JSONEncoder().encode(Row(id: 1, n: 1)))
        let session = NetworkSession(baseURL: "http://bench.local", transport: transport)
        // The same session with no deadline: what `send` costs without the race against one (a task for the
        // transport, a continuation, the race's lock), so the note can say where a send's time goes.
        let untimed = NetworkSession(baseURL: "http://bench.local", transport: transport, timeLimit: nil)
        let resource = Resource<RemoteRow>(session: session)
        let endpoint = Endpoint(.get, "row")
        let request = try await session.makeURLRequest(for: endpoint)
        let decoder = JSONDecoder()
        let floorReader = FloorReader(transport: transport, request: request)
        @Sendable func perRequest(_ body: () async throws -> Void) async throws -> Double {
            try await seconds { for _ in 0..<requests { try await body() } } / Double(requests) * 1e6
        }
        let results = try await interleaved(
            workload: "overhead per request, instant transport", unit: "µs", rounds: rounds, warmup: warmup,
            [
                (
                    "transport + JSONDecoder",
                    {
                        try await perRequest {
                            _ = try decoder.decode(Row.self, from: try await transport.send(request).body)
                        }
                    }
                ),
                (
                    "NetworkSession.send",
                    { try await perRequest { _ = try await session.send(endpoint, as: Row.self) } }
                ),
                ("Resource.read", { try await perRequest { _ = try await resource.read() } }),
                (
                    "floor: a bare shared read",
                    { try await perRequest { _ = try await floorReader.read() } }
                ),
                (
                    "send, no time limit",
                    { try await perRequest { _ = try await untimed.send(endpoint, as: Row.self) } }
                ),
            ])
        results.forEach { report.add($0) }
        report.compare(
            "instant transport: Resource.read / a bare shared read", results[2], over: results[3],
            meaning: "a read's cost over a task, a continuation, a lock and Observation around the same request")
        report.compare(
            "instant transport: send / send with no time limit", results[1], over: results[4],
            meaning: "what racing the transport against a deadline adds to a send")
        // What making a resource costs, as a request that makes a new one pays it (the HTTP GET+decode rows do).
        let inits = Int(10_000 * Swift.max(scale, 0.1))
        let made = Locked<Int>(0)
        let creation = try await interleaved(
            workload: "Resource.init", unit: "µs", rounds: rounds, warmup: warmup,
            [
                (
                    "new idle resource",
                    {
                        await seconds {
                            for _ in 0..<inits {
                                let resource = Resource<RemoteRow>(session: session)
                                // Used, so the optimizer cannot drop it.
                                if resource.observerCount > 0 { made.withLock { $0 += 1 } }
                            }
                        } / Double(inits) * 1e6
                    }
                )
            ])
        creation.forEach { report.add($0) }
        return report
    }

    /// 1,000 concurrent reads of one resource: one transport call, and about the time of one read.
    func coalescing() async throws -> Report {
        var report = Report()
        let readers = Int(1000 * scale)
        let body = try JSONEncoder().encode(Row(id: 1, n: 1))
        let callCounts = Locked<[Double]>([])
        let results = try await interleaved(
            workload: "coalescing: \(readers) concurrent reads", unit: "ms", rounds: rounds, warmup: warmup,
            [
                (
                    "1 read",
                    {
                        let stub = StubTransport()
                        stub.stub(.get, "/row", body: body, delay: .milliseconds(20))
                        let resource = Resource<RemoteRow>(
                            session: NetworkSession(baseURL: "http://bench.local", transport: stub))
                        return try await seconds { try await resource.read() } * 1000
                    }
                ),
                (
                    "\(readers) reads",
                    {
                        let stub = StubTransport()
                        stub.stub(.get, "/row", body: body, delay: .milliseconds(20))
                        let resource = Resource<RemoteRow>(
                            session: NetworkSession(baseURL: "http://bench.local", transport: stub))
                        let elapsed = try await seconds {
                            try await withThrowingTaskGroup(of: Row.self) { group in
                                for _ in 0..<readers { group.addTask { try await resource.read() } }
                                try await group.waitForAll()
                            }
                        }
                        callCounts.withLock { $0.append(Double(stub.requestCount)) }
                        return elapsed * 1000
                    }
                ),
            ])
        let calls = callCounts.withLock { $0 }
        results.forEach { report.add($0) }
        report.add(
            Measurement(
                workload: "coalescing: transport calls", variant: "\(readers) reads", unit: "calls",
                samples: Array(calls.dropFirst(warmup))))
        report.compare(
            "coalescing: wall time of \(readers) reads", results[1], over: results[0],
            meaning: "vs one read (1.0 = free)")
        return report
    }

    /// One state change delivered to N observers; registering and cancelling 10,000.
    func fanOut() async throws -> Report {
        var report = Report()
        let body = try JSONEncoder().encode(Row(id: 1, n: 2))
        for observers in [1, 100, 1000, 10_000].map({ max(1, Int(Double($0) * scale)) }) {
            var perDelivery: [Double] = []
            var memory: [Double] = []
            for round in 0..<(rounds + warmup) {
                let stub = StubTransport()
                stub.stub(.get, "/row", body: body)
                let resource = Resource<RemoteRow>(
                    session: NetworkSession(baseURL: "http://bench.local", transport: stub),
                    state: .available(Row(id: 1, n: 1)))
                let target = Row(id: 1, n: 2)
                // Memory of the registrations alone: the streams, their continuations and the resource's table.
                let before = heapBytes()
                let streams = (0..<observers).map { _ in resource.states }
                let after = heapBytes()
                let tasks = streams.map { stream in
                    Task {
                        for await state in stream where state == .available(target) { return }
                    }
                }
                let elapsed = try await seconds {
                    try await resource.read()
                    for task in tasks { await task.value }
                }
                if round >= warmup {
                    perDelivery.append(elapsed / Double(observers) * 1e9)
                    if let before, let after { memory.append((after - before) / Double(observers)) }
                }
            }
            report.add(
                Measurement(
                    workload: "fan-out: \(observers) observers", variant: "time per delivery", unit: "ns",
                    samples: perDelivery))
            if !memory.isEmpty {
                report.add(
                    Measurement(
                        workload: "fan-out: \(observers) observers", variant: "memory per observer", unit: "bytes",
                        samples: memory))
            }
        }
        let count = max(1, Int(10_000 * scale))
        var register: [Double] = []
        var cancel: [Double] = []
        for round in 0..<(rounds + warmup) {
            let resource = Resource<RemoteRow>(state: .available(Row(id: 1, n: 1)))
            var tasks: [Task<Void, Never>] = []
            let registered = await seconds {
                tasks = (0..<count).map { _ in
                    let stream = resource.states
                    return Task { for await _ in stream {} }
                }
            }
            let cancelled = await seconds {
                for task in tasks { task.cancel() }
                for task in tasks { await task.value }
            }
            guard resource.observerCount == 0 else {
                throw BenchmarkError("observers left after cancel: \(resource.observerCount)")
            }
            if round >= warmup {
                register.append(registered * 1000)
                cancel.append(cancelled * 1000)
            }
        }
        report.add(Measurement(workload: "observers: \(count)", variant: "register", unit: "ms", samples: register))
        report.add(Measurement(workload: "observers: \(count)", variant: "cancel", unit: "ms", samples: cancel))
        return report
    }

    /// 1,000 pages of 100 items through ListResource: is the last page as cheap as the first?
    func pagination() async throws -> Report {
        var report = Report()
        let pageCount = max(20, Int(1000 * scale))
        let window = pageCount / 10
        let server = PageServer(pageCount: pageCount, pageSize: 100)
        var firstWindow: [Double] = []
        var lastWindow: [Double] = []
        var peak: [Double] = []
        var previous = WeakList(nil)
        for round in 0..<(rounds + warmup) {
            // The previous round's list can be held for a moment by its last operation's task; wait until it
            // is gone, so the baseline does not include it.
            try await previous.waitUntilReleased()
            let baseline = heapBytes() ?? 0
            let (times, highest, list) = try await loadAllPages(
                server: server, pageCount: pageCount, baseline: baseline)
            previous = list
            if round >= warmup {
                firstWindow.append(times.prefix(window).reduce(0, +) * 1000)
                lastWindow.append(times.suffix(window).reduce(0, +) * 1000)
                let payload = Double(pageCount * 100 * MemoryLayout<Row>.stride)
                peak.append((highest - baseline) / payload)
            }
        }
        let first = Measurement(
            workload: "pagination: \(pageCount)×100 items", variant: "first \(window) pages", unit: "ms",
            samples: firstWindow)
        let last = Measurement(
            workload: "pagination: \(pageCount)×100 items", variant: "last \(window) pages", unit: "ms",
            samples: lastWindow)
        report.add(first)
        report.add(last)
        report.add(
            Measurement(
                workload: "pagination: \(pageCount)×100 items", variant: "peak heap / payload", unit: "×", samples: peak
            )
        )
        report.compare(
            "pagination: last \(window) pages / first \(window)", last, over: first, meaning: "near 1 = linear cost")
        return report
    }

    private func loadAllPages(
        server: PageServer, pageCount: Int, baseline: Double
    ) async throws -> ([Double], Double, WeakList) {
        let list = ListResource<RemoteRows>(
            session: NetworkSession(baseURL: "http://bench.local", transport: server), request: ())
        var highest = baseline
        var times: [Double] = []
        times.reserveCapacity(pageCount)
        for _ in 0..<pageCount {
            times.append(try await seconds { try await list.loadNextPage() })
            if let now = heapBytes() { highest = max(highest, now) }
        }
        guard list.items.count == pageCount * 100, !list.pagination.hasMore else {
            throw BenchmarkError("pagination loaded \(list.items.count) items")
        }
        return (times, highest, WeakList(list))
    }

    /// Requests per second through a NetworkSession into InMemoryBackend.
    func backendThroughput() async throws -> Report {
        var report = Report()
        let backend = InMemoryBackend()
        try backend.seed((0..<100).map { Row(id: $0, n: $0) }.map { ["id": "\($0.id)", "n": "\($0.n)"] }, into: "rows")
        let session = NetworkSession(baseURL: "http://bench.local", transport: backend)
        let requests = max(100, Int(5000 * scale))
        let results = try await interleaved(
            workload: "InMemoryBackend GET (\(requests) req)", unit: "req/s", rounds: rounds, warmup: warmup,
            [
                (
                    "sequential",
                    {
                        Double(requests)
                            / (try await seconds {
                                for index in 0..<requests {
                                    _ = try await session.data(for: Endpoint(.get, "rows/\(index % 100)"))
                                }
                            })
                    }
                ),
                (
                    "16 concurrent",
                    {
                        Double(requests)
                            / (try await seconds {
                                try await withThrowingTaskGroup(of: Void.self) { group in
                                    for worker in 0..<16 {
                                        group.addTask {
                                            for index in 0..<(requests / 16) {
                                                _ = try await session.data(
                                                    for: Endpoint(.get, "rows/\((index + worker) % 100)"))
                                            }
                                        }
                                    }
                                    try await group.waitForAll()
                                }
                            })
                    }
                ),
            ])
        results.forEach { report.add($0) }
        return report
    }
}

/// A weak reference to a list, to see when it is deallocated.
final class WeakList: Sendable {
    private let reference: Locked<WeakBox>

    init(_ list: ListResource<RemoteRows>?) { reference = Locked(WeakBox(list: list)) }

    func waitUntilReleased() async throws {
        for _ in 0..<100_000 {
            if reference.withLock({ $0.list == nil }) { return }
            await Task.yield()
        }
        throw BenchmarkError("a ListResource was not released")
    }

    struct WeakBox {
        weak var list: ListResource<RemoteRows>?
    }
}
