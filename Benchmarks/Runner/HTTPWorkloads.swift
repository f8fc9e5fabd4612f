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

/// ResourceKit against `URLSession.data(for:)` + `JSONDecoder` on the same endpoints, the same URLSession.
struct HTTPWorkloads: Sendable {
    let baseURL: String
    let requests: Int
    let rounds: Int
    let warmup: Int
    let urlSession: URLSession
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
        let session = NetworkSession(
            baseURL: baseURL + "/api/collections", transport: URLSessionTransport(session: urlSession))
        self.session = session
        resources = [Resource(session: session)]
    }

    /// How `profileReads` reads.
    enum ProfiledPath {
        case raw, rawDataTask, transport, send, read, newResource
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
        let transport = URLSessionTransport(session: urlSession)
        for _ in 0..<requests {
            switch path {
            case .raw:
                _ = try decoder.decode(BenchPost.self, from: try await urlSession.data(for: URLRequest(url: url)).0)
            case .rawDataTask: try await rawDataTask(url)
            case .transport:
                var request = URLRequest(url: url)
                request.setValue("application/json", forHTTPHeaderField: "Accept")
                _ = try decoder.decode(BenchPost.self, from: try await transport.send(request).body)
            case .send: _ = try await session.send(endpoint, as: BenchPost.self)
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

    /// Where a sequential request's cost goes: each layer of ResourceKit against the raw baseline.
    private func decomposition(url: URL, id: String) async throws -> Report {
        var report = Report()
        let transport = URLSessionTransport(session: urlSession)
        let endpoint = Endpoint(.get, "posts/records").appending(id: id)
        let unused = CPUCounter()
        let name = "layers, sequential (\(requests) req)"
        let results = try await interleaved(
            workload: name, unit: "req/s", rounds: rounds, warmup: warmup,
            [
                ("raw data(for:)", { try await rate(1, cpu: unused) { _ in try await raw(url) } }),
                ("raw dataTask", { try await rate(1, cpu: unused) { _ in try await rawDataTask(url) } }),
                (
                    "URLSessionTransport",
                    {
                        try await rate(1, cpu: unused) { _ in
                            var request = URLRequest(url: url)
                            request.setValue("application/json", forHTTPHeaderField: "Accept")
                            let response = try await transport.send(request)
                            _ = try JSONDecoder().decode(BenchPost.self, from: response.body)
                        }
                    }
                ),
                (
                    "NetworkSession.send",
                    {
                        try await rate(1, cpu: unused) { _ in _ = try await session.send(endpoint, as: BenchPost.self) }
                    }
                ),
                ("Resource.read", { try await rate(1, cpu: unused) { _ in try await kit(id: id) } }),
            ])
        results.forEach { report.add($0) }
        for layer in results.dropFirst() {
            report.compare(
                "layers: \(layer.variant)", layer, over: results[0], meaning: "request rate / raw data(for:)")
        }
        return report
    }

    private func rawDataTask(_ url: URL) async throws {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            urlSession.dataTask(with: request) { data, _, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: data ?? Data())
                }
            }.resume()
        }
        _ = try JSONDecoder().decode(BenchPost.self, from: data)
    }

    /// Requests per second for `requests` requests spread over `concurrency` workers.
    private func rate(
        _ concurrency: Int, cpu: CPUCounter, _ body: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Double {
        let perWorker = requests / concurrency
        let cpuStart = cpuSeconds()
        let elapsed = try await seconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<concurrency {
                    group.addTask { for _ in 0..<perWorker { try await body(worker) } }
                }
                try await group.waitForAll()
            }
        }
        cpu.record((cpuSeconds() - cpuStart) / Double(perWorker * concurrency) * 1e6)
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

final class CPUCounter: Sendable {
    private let storage = Locked<[Double]>([])
    func record(_ value: Double) { storage.withLock { $0.append(value) } }
    var samples: [Double] { storage.withLock { $0 } }
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
