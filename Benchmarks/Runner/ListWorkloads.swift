import BenchmarkFixtures
import Foundation
import ResourceKit

/// The same list, 50 rows a page, as the HTTP benchmark's lists.
struct RemoteRows50: Listable {
    typealias Value = Row
    typealias Item = Row
    typealias ListResponse = PageEnvelope<Row>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "rows") }
}

extension InProcessWorkloads {
    /// A list of 20 pages of 50 loaded whole on an instant transport, through `ListResource.loadAll` and
    /// through `session.pages(of:)`: what a list page costs over the same page sent (the HTTP row
    /// `list all records, 50 per page`, without the network).
    func listPages() async throws -> Report {
        var report = Report()
        let server = PageServer(pageCount: 20, pageSize: 50)
        let session = NetworkSession(baseURL: "http://bench.local", transport: server)
        let lists = max(20, Int(500 * scale))
        let results = try await interleaved(
            workload: "list of 20 pages of 50, instant transport", unit: "µs/page", rounds: rounds, warmup: warmup,
            [
                (
                    "page sequence",
                    {
                        try await seconds {
                            for _ in 0..<lists {
                                for try await _ in session.pages(of: RemoteRows50.self) {}
                            }
                        } / Double(lists * 20) * 1e6
                    }
                ),
                (
                    "ListResource.loadAll",
                    {
                        try await seconds {
                            for _ in 0..<lists {
                                try await ListResource<RemoteRows50>(session: session, request: ()).loadAll()
                            }
                        } / Double(lists * 20) * 1e6
                    }
                ),
            ])
        results.forEach { report.add($0) }
        report.comparePaired(
            "list page: ListResource / page sequence", results[1], over: results[0],
            meaning: "a list page's cost over the same page sent, instant transport")
        return report
    }

    /// For profilers: `count` lists of 20 pages of 50 on an instant transport, through `ListResource.loadAll`,
    /// or `session.pages(of:)` with `pages`.
    static func profileLists(_ count: Int, pages: Bool) async throws {
        let session = NetworkSession(baseURL: "http://bench.local", transport: PageServer(pageCount: 20, pageSize: 50))
        for _ in 0..<count {
            if pages {
                for try await _ in session.pages(of: RemoteRows50.self) {}
            } else {
                try await ListResource<RemoteRows50>(session: session, request: ()).loadAll()
            }
        }
    }
}
