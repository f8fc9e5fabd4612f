import BenchmarkFixtures
import Foundation
import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct BenchPost: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
    var userId: Int?
    var position: Int?
}

struct RemoteBenchPost: Readable {
    typealias Value = BenchPost
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts/records").appending(id: id) }
}

struct RemoteBenchPosts: Listable {
    typealias Value = BenchPost
    typealias Item = BenchPost
    typealias ListResponse = PageEnvelope<BenchPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint {
        Endpoint(.get, "posts/records", query: ["sort": "position"])
    }
}

struct RawPage: Decodable {
    var totalPages: Int
    var items: [BenchPost]
}

/// ResourceKit against `URLSession.data(for:)` + `JSONDecoder` on the same endpoints: raw requests on a
/// `URLSession`, ResourceKit's on the session `URLSessionTransport(configuration:)` makes from the same
/// configuration, as an app makes them.
struct HTTPWorkloads: Sendable {
    let baseURL: String
    let requests: Int
    let rounds: Int
    let warmup: Int
    let urlSession: URLSession
    /// The transport of `session`, on a session of its own.
    let transport: URLSessionTransport
    let session: NetworkSession
    /// One resource, for `profileReads(.read)`.
    let resources: [Resource<RemoteBenchPost>]

    init(baseURL: String, requests: Int, rounds: Int, warmup: Int) {
        self.baseURL = baseURL
        self.requests = requests
        self.rounds = rounds
        self.warmup = warmup
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 30
        configuration.urlCache = nil
        urlSession = URLSession(configuration: configuration)
        let transport = URLSessionTransport(configuration: configuration)
        self.transport = transport
        let session = NetworkSession(baseURL: baseURL + "/api/collections", transport: transport)
        self.session = session
        resources = [Resource(session: session)]
    }

    /// How `profileReads` reads.
    enum ProfiledPath {
        case raw, rawDataTask, rawDataTaskWithDelegate, transport, send, sendInTask, read, newResource
    }

    /// `requests` sequential reads of one post: through a `Resource` (one, or a new one each), through
    /// `NetworkSession.send`, or raw URLSession + JSONDecoder.
    func profileReads(_ path: ProfiledPath) async throws {
        let first: PageEnvelope<BenchPost> = try await session.send(
            Endpoint(.get, "posts/records", query: ["perPage": "1", "sort": "position"]))
        guard let id = first.items.first?.id,
            let url = URL(string: "\(baseURL)/api/collections/posts/records/\(id)")
        else { throw BenchmarkError("the server has no posts") }
        let decoder = JSONDecoder()
        let endpoint = Endpoint(.get, "posts/records").appending(id: id)
        for _ in 0..<requests {
            switch path {
            case .raw:
                _ = try decoder.decode(BenchPost.self, from: try await urlSession.data(for: URLRequest(url: url)).0)
            case .rawDataTask: try await rawDataTask(url, delegate: nil)
            case .rawDataTaskWithDelegate: try await rawDataTask(url, delegate: RedirectRefusal())
            case .transport:
                var request = URLRequest(url: url)
                request.setValue("application/json", forHTTPHeaderField: "Accept")
                _ = try decoder.decode(BenchPost.self, from: try await transport.send(request).body)
            case .send: _ = try await session.send(endpoint, as: BenchPost.self)
            case .sendInTask: try await sendInTask(endpoint)
            case .read: _ = try await resources[0].read(id)
            case .newResource: _ = try await Resource<RemoteBenchPost>(session: session).read(id)
            }
        }
    }

    func run() async throws -> Report {
        var report = Report()
        let first: PageEnvelope<BenchPost> = try await session.send(
            Endpoint(.get, "posts/records", query: ["perPage": "1", "sort": "position"]))
        guard let id = first.items.first?.id else { throw BenchmarkError("the server has no posts") }
        guard let url = URL(string: "\(baseURL)/api/collections/posts/records/\(id)") else {
            throw BenchmarkError("bad base URL \(baseURL)")
        }

        report.merge(try await decomposition(url: url, id: id))

        for concurrency in [1, 16, 64] {
            let name = concurrency == 1 ? "GET+decode sequential" : "GET+decode \(concurrency) concurrent"
            let cpuRaw = CPUCounter()
            let cpuKit = CPUCounter()
            let results = try await interleaved(
                workload: name + " (\(requests) req)", unit: "req/s", rounds: rounds, warmup: warmup,
                [
                    ("raw URLSession", { try await rate(concurrency, cpu: cpuRaw) { _ in try await raw(url) } }),
                    ("ResourceKit", { try await rate(concurrency, cpu: cpuKit) { _ in try await kit(id: id) } }),
                ])
            results.forEach { report.add($0) }
            report.compare(
                name, results[1], over: results[0], meaning: "ResourceKit / raw request rate (target ≥ 0.97)")
            let cpu = [
                Measurement(
                    workload: name + " CPU", variant: "raw URLSession", unit: "µs/req",
                    samples: Array(cpuRaw.samples.dropFirst(warmup))),
                Measurement(
                    workload: name + " CPU", variant: "ResourceKit", unit: "µs/req",
                    samples: Array(cpuKit.samples.dropFirst(warmup))),
            ]
            cpu.forEach { report.add($0) }
            report.compare(
                name + " CPU", cpu[1], over: cpu[0], meaning: "ResourceKit / raw CPU time per request (lower is better)"
            )
        }

        let lists = try await interleaved(
            workload: "list all records, 50 per page", unit: "lists/s", rounds: rounds, warmup: warmup,
            [
                ("raw loop", { 1 / (try await seconds { _ = try await rawList() }) }),
                (
                    "ListResource",
                    {
                        1
                            / (try await seconds {
                                let list = ListResource<RemoteBenchPosts>(session: session, request: ())
                                try await list.loadAll()
                            })
                    }
                ),
                (
                    "page sequence",
                    {
                        1
                            / (try await seconds {
                                for try await _ in session.pages(of: RemoteBenchPosts.self) {}
                            })
                    }
                ),
            ])
        lists.forEach { report.add($0) }
        report.compare(
            "list all: ListResource", lists[1], over: lists[0], meaning: "ListResource / raw loop rate (target ≥ 0.97)")
        report.compare(
            "list all: page sequence", lists[2], over: lists[0],
            meaning: "page sequence / raw loop rate (target ≥ 0.97)")
        return report
    }

    /// Where a sequential request's cost goes: each layer of ResourceKit against the raw baseline, in request
    /// rate and in client CPU. `URLSessionTransport` runs a data task with a task delegate, which keeps redirects
    /// and authentication challenges for itself on Linux (`data(for:delegate:)` does not give its delegate those
    /// callbacks there, and cancelling it can deadlock: swift-corelibs-foundation #5412). `raw dataTask +
    /// delegate` is that on a plain session, whose delegate queue runs the completion on another thread;
    /// `URLSessionTransport, given session` is the transport on that session, `URLSessionTransport` on the
    /// session it makes, which runs completions on `URLSession`'s own queue, as `data(for:)` does.
    private func decomposition(url: URL, id: String) async throws -> Report {
        var report = Report()
        let givenSession = URLSessionTransport(session: urlSession)
        let endpoint = Endpoint(.get, "posts/records").appending(id: id)
        let name = "layers, sequential (\(requests) req)"
        let layers: [(String, @Sendable () async throws -> Void)] = [
            ("raw data(for:)", { try await raw(url) }),
            ("raw dataTask", { try await rawDataTask(url, delegate: nil) }),
            ("raw dataTask + delegate", { try await rawDataTask(url, delegate: RedirectRefusal()) }),
            ("URLSessionTransport, given session", { try await transportGET(url, on: givenSession) }),
            ("URLSessionTransport", { try await transportGET(url, on: transport) }),
            ("NetworkSession.send", { _ = try await session.send(endpoint, as: BenchPost.self) }),
            // `send` from a task of its own that resumes the caller, as a resource's read runs: what the hop costs.
            ("send in a task", { try await sendInTask(endpoint) }),
            ("Resource.read", { try await kit(id: id) }),
        ]
        let counters = layers.map { _ in CPUCounter() }
        let results = try await interleaved(
            workload: name, unit: "req/s", rounds: rounds, warmup: warmup,
            zip(layers, counters).map { layer, cpu in
                (layer.0, { try await rate(1, cpu: cpu) { _ in try await layer.1() } })
            })
        results.forEach { report.add($0) }
        let cpu = zip(layers, counters).map { layer, counter in
            Measurement(
                workload: "layers, sequential CPU", variant: layer.0, unit: "µs/req",
                samples: Array(counter.samples.dropFirst(warmup)))
        }
        cpu.forEach { report.add($0) }
        // `data(for:)` calls its completion on the session's own queue; a data task's completion handler runs
        // on the delegate queue, one more thread to wake per request.
        for (layer, counter) in zip(layers, counters) {
            report.add(
                Measurement(
                    workload: "layers, sequential thread waits", variant: layer.0, unit: "per req",
                    samples: Array(counter.switches.dropFirst(warmup))))
        }
        for (layer, layerCPU) in zip(results, cpu).dropFirst() {
            report.compare(
                "layers: \(layer.variant)", layer, over: results[0], meaning: "request rate / raw data(for:)")
            report.compare(
                "layers CPU: \(layer.variant)", layerCPU, over: cpu[0], meaning: "CPU per request / raw data(for:)")
        }
        // What the layers above the transport add: the session, the resource's shared task and its machine.
        report.compare(
            "layers: Resource.read over URLSessionTransport", results[7], over: results[4],
            meaning: "request rate / URLSessionTransport")
        report.compare(
            "layers CPU: Resource.read over URLSessionTransport", cpu[7], over: cpu[4],
            meaning: "CPU per request / URLSessionTransport")
        return report
    }

    private func transportGET(_ url: URL, on transport: URLSessionTransport) async throws {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        _ = try JSONDecoder().decode(BenchPost.self, from: try await transport.send(request).body)
    }

    private func rawDataTask(_ url: URL, delegate: RedirectRefusal?) async throws {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            let task = urlSession.dataTask(with: request) { data, _, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: data ?? Data())
                }
            }
            task.delegate = delegate
            task.resume()
        }
        _ = try JSONDecoder().decode(BenchPost.self, from: data)
    }

    /// `send` in a task started at once, whose result resumes the caller: the shape of a resource's read.
    private func sendInTask(_ endpoint: Endpoint) async throws {
        let session = session
        let result: Result<BenchPost, NetworkError> = await withCheckedContinuation { continuation in
            Task.immediate {
                do throws(NetworkError) {
                    continuation.resume(returning: .success(try await session.send(endpoint, as: BenchPost.self)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        _ = try result.get()
    }

    /// Requests per second for `requests` requests spread over `concurrency` workers.
    private func rate(
        _ concurrency: Int, cpu: CPUCounter, _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Double {
        let perWorker = requests / concurrency
        let cpuStart = cpuSeconds()
        let switchesStart = voluntaryContextSwitches()
        let elapsed = try await seconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<concurrency {
                    group.addTask { for _ in 0..<perWorker { try await body(worker) } }
                }
                try await group.waitForAll()
            }
        }
        cpu.record(
            (cpuSeconds() - cpuStart) / Double(perWorker * concurrency) * 1e6,
            switches: (voluntaryContextSwitches() - switchesStart) / Double(perWorker * concurrency))
        return Double(perWorker * concurrency) / elapsed
    }

    private func raw(_ url: URL) async throws {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await urlSession.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchmarkError("status") }
        _ = try JSONDecoder().decode(BenchPost.self, from: data)
    }

    /// A new resource for every request, as a screen that opens a post makes one: concurrent reads of one
    /// resource would share requests, and making it is part of the cost.
    private func kit(id: String) async throws {
        _ = try await Resource<RemoteBenchPost>(session: session).read(id)
    }

    private func rawList() async throws -> Int {
        var page = 1
        var count = 0
        let decoder = JSONDecoder()
        while true {
            var components = URLComponents(string: "\(baseURL)/api/collections/posts/records")
            components?.queryItems = [
                URLQueryItem(name: "sort", value: "position"), URLQueryItem(name: "page", value: String(page)),
                URLQueryItem(name: "perPage", value: "50"),
            ]
            guard let url = components?.url else { throw BenchmarkError("url") }
            let (data, _) = try await urlSession.data(for: URLRequest(url: url))
            let decoded = try decoder.decode(RawPage.self, from: data)
            count += decoded.items.count
            if decoded.items.isEmpty || page >= decoded.totalPages { return count }
            page += 1
        }
    }
}

/// A task delegate that hands redirects back, as `URLSessionTransport`'s does.
final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

/// Client CPU per request, and thread hand-offs (voluntary context switches) per request, of each round.
final class CPUCounter: Sendable {
    private let storage = Locked<(cpu: [Double], switches: [Double])>(([], []))
    func record(_ value: Double, switches: Double) {
        storage.withLock {
            $0.cpu.append(value)
            $0.switches.append(switches)
        }
    }
    var samples: [Double] { storage.withLock { $0.cpu } }
    var switches: [Double] { storage.withLock { $0.switches } }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
