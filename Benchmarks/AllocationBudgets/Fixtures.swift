import BenchmarkFixtures
import Foundation
import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `GET rows?page=…`: pages of 50 rows.
struct RemoteRows: Listable {
    typealias Value = Row
    typealias Item = Row
    typealias ListResponse = PageEnvelope<Row>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "rows") }
}

/// The page body PageEnvelope decodes.
struct PageBody: Encodable {
    var page = 1
    var perPage: Int
    var totalItems: Int
    var totalPages = 1
    var items: [Row]

    init(items: [Row]) {
        perPage = items.count
        totalItems = items.count
        self.items = items
    }
}

/// A store's server, answering at once: a `PATCH` gets its own body back (so every update really changes
/// the row), a `GET rows?list=k` gets list `k`'s pre-encoded page. Only the `PATCH` path runs while counting;
/// the lists are loaded before.
struct StoreServer: HTTPTransport {
    let lists: [Data]

    init(listCount: Int) throws {
        let encoder = JSONEncoder()
        lists = try (0..<listCount).map { list in
            let rows = [Row(id: 1, n: 0)] + (1..<10).map { Row(id: 1_000 + list * 10 + $0, n: $0) }
            return try encoder.encode(PageBody(items: rows))
        }
    }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if request.httpMethod == "PATCH" {
            return HTTPResponse(statusCode: 200, body: request.httpBody ?? Data(), url: request.url)
        }
        let query = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
        let list = Int(query.first { $0.name == "list" }?.value ?? "") ?? -1
        guard lists.indices.contains(list) else { return HTTPResponse(statusCode: 404, url: request.url) }
        return HTTPResponse(statusCode: 200, body: lists[list], url: request.url)
    }
}

/// A workload that did not do what it says.
struct WorkloadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
