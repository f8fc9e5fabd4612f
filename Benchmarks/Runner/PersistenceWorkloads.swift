import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A persistent store: a cold start of 10,000 items from disk, 1,000 updates written, a read's cost.
struct PersistenceWorkloads {
    let scale: Double
    let rounds: Int
    let warmup: Int

    static let feedSize = 500

    /// One page of `feedSize` rows.
    struct Feed: Listable, PersistedResource {
        typealias Value = Row
        typealias Item = Row
        typealias ListResponse = PageEnvelope<Row>
        static let pagination = PageNumberPagination(pageSize: feedSize)
        static let persistedItemLimit = feedSize
        static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "feed") }
    }

    struct FeedServer: HTTPTransport {
        let body: Data
        init() throws {
            struct Body: Encodable {
                var page = 1
                var perPage = feedSize
                var totalItems = feedSize
                var totalPages = 1
                var items = (1...feedSize).map { Row(id: $0, n: $0) }
            }
            body = try JSONEncoder().encode(Body())
        }
        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            HTTPResponse(statusCode: 200, body: body, url: request.url)
        }
    }

    /// From opening the storage of a store whose feed was persisted by an earlier run to the feed's first state,
    /// its items from disk, in milliseconds per round.
    func feedColdStarts() async throws -> [Double] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = NetworkSession(baseURL: "http://bench.local", transport: try FeedServer())
        do {
            let store = ResourceStore(
                session: session, persistence: StorePersistence(storage: try FileEntryStorage(directory: directory)))
            try await store.list(Feed.self).loadFirstPage()
            await store.persistence?.flush()
        }
        var samples: [Double] = []
        for round in 0..<(rounds + warmup) {
            let start = ContinuousClock.now
            let store = ResourceStore(
                session: session, persistence: StorePersistence(storage: try FileEntryStorage(directory: directory)))
            let feed = store.list(Feed.self)
            let count = feed.items.count
            let elapsed = (ContinuousClock.now - start).inSeconds * 1e3
            guard feed.isRestored, count == Self.feedSize else {
                throw BenchmarkError("the feed did not start from disk")
            }
            if round >= warmup { samples.append(elapsed) }
        }
        return samples
    }

    static func profileReads(_ count: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        let delay = Int(ProcessInfo.processInfo.environment["BENCH_WRITE_DELAY_MS"] ?? "") ?? 100
        let resource = ResourceStore(
            session: session,
            persistence: StorePersistence(
                storage: try FileEntryStorage(directory: directory), writeDelay: .milliseconds(delay))
        ).resource(RemoteRowByID.self, id: 1)
        var start = ContinuousClock.now
        for i in 0..<count {
            _ = try await resource.read(1)
            if i % 20_000 == 19_999 {
                let now = ContinuousClock.now
                print("20,000 reads: \((now - start).inSeconds * 1e3) ms")
                start = now
            }
        }
    }

    /// A store remembering nothing in memory (capacity 0), persisting into `directory`: every value a
    /// resource starts from comes from disk.
    static func rowStore(_ session: NetworkSession, in directory: URL) throws -> ResourceStore {
        ResourceStore(
            session: session, capacity: 0,
            persistence: StorePersistence(storage: try FileEntryStorage(directory: directory, maximumBytes: 1 << 30)))
    }

    /// For profilers: `rounds` cold starts of 10,000 persisted items into live resources.
    static func profileHydrate(_ rounds: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        do {
            let store = try Self.rowStore(session, in: directory)
            let resources = (1...10_000).map { store.resource(RemoteRowByID.self, id: $0) }
            for id in 1...10_000 { store.apply(.updated(Row(id: id, n: 1)), as: RemoteRowByID.self) }
            await store.persistence?.flush()
            _ = resources.count
        }
        for _ in 0..<rounds {
            let store = try Self.rowStore(session, in: directory)
            let start = ContinuousClock.now
            let restored = (1...10_000).map { store.resource(RemoteRowByID.self, id: $0) }
            print("hydrate: \((ContinuousClock.now - start).inSeconds * 1e3) ms, \(restored.count)")
        }
    }

    func run() async throws -> Report {
        var report = Report()
        // First, before the file-heavy rows leave the kernel deleting thousands of files.
        // A read of a held resource, with and without persistence: the write queue's cost on the caller.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        let memory = ResourceStore(session: session).resource(RemoteRowByID.self, id: 1)
        let persistent = ResourceStore(
            session: session,
            persistence: StorePersistence(storage: try FileEntryStorage(directory: directory))
        ).resource(RemoteRowByID.self, id: 1)
        // The same with writes held back for the whole row: the caller's path alone, without the disk's work.
        let quietDirectory = directory.appendingPathExtension("quiet")
        defer { try? FileManager.default.removeItem(at: quietDirectory) }
        let deferred = ResourceStore(
            session: session,
            persistence: StorePersistence(
                storage: try FileEntryStorage(directory: quietDirectory), writeDelay: .seconds(60))
        ).resource(RemoteRowByID.self, id: 1)
        let requests = max(200, Int(20_000 * scale))
        @Sendable func perRead(_ resource: Resource<RemoteRowByID>) async throws -> Double {
            try await seconds { for _ in 0..<requests { _ = try await resource.read(1) } } / Double(requests) * 1e6
        }
        let reads = try await interleaved(
            workload: "read through a store, instant transport", unit: "µs", rounds: rounds, warmup: warmup,
            [
                ("memory-only store", { try await perRead(memory) }),
                ("persistent store", { try await perRead(persistent) }),
                ("persistent, writes held", { try await perRead(deferred) }),
            ])
        reads.forEach { report.add($0) }
        report.compare(
            "persistent store read / memory-only read", reads[1], over: reads[0],
            meaning: "a read whose answer is written to disk every 100 ms (target ≤ 1.1)")
        report.comparePaired(
            "persistent store read / memory-only read, paired", reads[1], over: reads[0],
            meaning: "the same, median of the ratios of rounds run side by side (target ≤ 1.1)")
        report.compare(
            "persistent read, writes held / memory-only read", reads[2], over: reads[0],
            meaning: "the caller's path alone: marking the value for the next write")
        let items = max(100, Int(10_000 * scale))
        let updates = max(50, Int(1_000 * scale))
        var hydrate: [Double] = []
        var persist: [Double] = []
        for _ in 0..<(rounds + warmup) {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            // One run persists `items` rows…
            let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
            do {
                let store = try Self.rowStore(session, in: directory)
                let resources = (1...items).map { store.resource(RemoteRowByID.self, id: $0) }
                for id in 1...items { store.apply(.updated(Row(id: id, n: 1)), as: RemoteRowByID.self) }
                await store.persistence?.flush()
                // …then `updates` of them change, and are written.
                let start = ContinuousClock.now
                for id in 1...updates { store.apply(.updated(Row(id: id, n: 2)), as: RemoteRowByID.self) }
                await store.persistence?.flush()
                persist.append((ContinuousClock.now - start).inSeconds * 1e3)
                _ = resources.count
            }
            // The next run makes a live resource of each, from disk.
            let store = try Self.rowStore(session, in: directory)
            let start = ContinuousClock.now
            let restored = (1...items).map { store.resource(RemoteRowByID.self, id: $0) }
            hydrate.append((ContinuousClock.now - start).inSeconds * 1e3)
            guard restored.allSatisfy({ $0.isRestored }), restored[0].value == Row(id: 1, n: 2) else {
                throw BenchmarkError("a resource did not start from disk")
            }
        }
        report.add(
            Measurement(
                workload: "persistent store", variant: "hydrate \(items) items", unit: "ms",
                samples: Array(hydrate.dropFirst(warmup))))
        report.add(
            Measurement(
                workload: "persistent store", variant: "persist \(updates) updates", unit: "ms",
                samples: Array(persist.dropFirst(warmup))))
        report.add(
            Measurement(
                workload: "persistent store", variant: "cold start of a feed of \(Self.feedSize)", unit: "ms",
                samples: try await feedColdStarts()))

        return report
    }
}
