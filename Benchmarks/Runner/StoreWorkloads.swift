import BenchmarkFixtures
import Foundation
import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers `rows/<id>` with one row, and `rows?list=k` with list `k`'s page, at once.
struct RowServer: HTTPTransport {
    let row: Data

    init() throws {
        row = try JSONEncoder().encode(Row(id: 1, n: 2))
    }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        guard request.url?.path.hasPrefix("/rows/") != true else {
            return HTTPResponse(statusCode: 200, body: row, url: request.url)
        }
        struct Body: Encodable {
            var page = 1
            var perPage = 10
            var totalItems = 10
            var totalPages = 1
            var items: [Row]
        }
        let query = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
        let list = Int(query.first { $0.name == "list" }?.value ?? "0") ?? 0
        let rows = [Row(id: 1, n: 1)] + (1..<10).map { Row(id: 1_000 + list * 10 + $0, n: $0) }
        let body = (try? JSONEncoder().encode(Body(items: rows))) ?? Data()
        return HTTPResponse(statusCode: 200, body: body, url: request.url)
    }
}

extension InProcessWorkloads {
    /// For profilers: the `store resource read` row (or, `bare`, the `bare Resource.read` row) alone.
    static func profileStoreReads(_ count: Int, bare: Bool) async throws {
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        // Kept alive while reading: a store's resources hold it weakly.
        let store = ResourceStore(session: session)
        let resource = bare ? Resource<RemoteRowByID>(session: session) : store.resource(RemoteRowByID.self, id: 1)
        for _ in 0..<count { _ = try await resource.read(1) }
        withExtendedLifetime(store) {}
    }

    /// What identity costs on the read path, and what one update costs when 1,000 lists show its item.
    func store() async throws -> Report {
        var report = Report()
        let requests = max(200, Int(20_000 * scale))
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        let bare = Resource<RemoteRowByID>(session: session)
        let store = ResourceStore(session: session)
        let held = store.resource(RemoteRowByID.self, id: 1)
        @Sendable func perRequest(_ body: () async throws -> Void) async throws -> Double {
            try await seconds { for _ in 0..<requests { try await body() } } / Double(requests) * 1e6
        }
        let reads = try await interleaved(
            workload: "read through a store, instant transport", unit: "µs", rounds: rounds, warmup: warmup,
            [
                ("bare Resource.read", { try await perRequest { _ = try await bare.read(1) } }),
                ("store resource read", { try await perRequest { _ = try await held.read(1) } }),
                (
                    "store.resource(id:) + read",
                    { try await perRequest { _ = try await store.resource(RemoteRowByID.self, id: 1).read(1) } }
                ),
            ])
        reads.forEach { report.add($0) }
        report.compare(
            "store resource read / bare read", reads[1], over: reads[0],
            meaning: "the cost of one truth on a read: publishing the answer to the store")
        report.compare(
            "store lookup + read / bare read", reads[2], over: reads[0],
            meaning: "the cost of identity: finding the live object by type and id, then reading")

        let listCount = max(20, Int(1_000 * scale))
        let updates = max(20, Int(500 * scale))
        let crowded = ResourceStore(session: session)
        let lists = (0..<listCount).map { crowded.list(RemoteRowLists.self, request: $0) }
        for list in lists { try await list.loadFirstPage() }
        let detail = crowded.resource(RemoteRowByID.self, id: 1)
        let alone = ResourceStore(session: session).resource(RemoteRowByID.self, id: 1)
        let row = Row(id: 1, n: 2)
        @Sendable func perUpdate(_ resource: Resource<RemoteRowByID>) async throws -> Double {
            try await seconds { for _ in 0..<updates { try await resource.update(row) } } / Double(updates) * 1e6
        }
        let propagation = try await interleaved(
            workload: "one update, instant transport", unit: "µs", rounds: rounds, warmup: warmup,
            [
                ("bare Resource.update", { try await perUpdate(Resource<RemoteRowByID>(session: session)) }),
                ("store, no list holds it", { try await perUpdate(alone) }),
                ("store, \(listCount) lists hold it", { try await perUpdate(detail) }),
            ])
        propagation.forEach { report.add($0) }
        report.compare(
            "update reaching \(listCount) lists / bare update", propagation[2], over: propagation[0],
            meaning: "one update replaced in every live list, with no request")
        guard lists.allSatisfy({ $0.items[0] == row }) else {
            throw BenchmarkError("an update did not reach every list")
        }
        return report
    }
}
