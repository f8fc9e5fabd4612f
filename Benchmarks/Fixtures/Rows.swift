public import Foundation
public import ResourceKit

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The small JSON struct the benchmarks and the allocation budgets decode.
public struct Row: Codable, Sendable, Equatable, Identifiable {
    public var id: Int
    public var n: Int

    public init(id: Int, n: Int) {
        self.id = id
        self.n = n
    }
}

/// `GET row`: one row.
public struct RemoteRow: Readable {
    public typealias Value = Row
    public static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "row") }
}

/// `GET rows/<id>` and `PATCH rows/<id>`: one row by id, as a store holds it.
public struct RemoteRowByID: Readable, Updatable {
    public typealias Value = Row
    public typealias ReadRequest = Int
    public static func readEndpoint(for id: Int) -> Endpoint { Endpoint(.get, "rows").appending(id: String(id)) }
    public static func updateEndpoint(for row: Row) -> Endpoint {
        Endpoint(.patch, "rows", body: .json(row)).appending(id: String(row.id))
    }
}

/// `GET rows?list=k`: list `k` of ten rows; row 1 is in every list.
public struct RemoteRowLists: Listable {
    public typealias Value = Row
    public typealias Item = Row
    public typealias ListRequest = Int
    public typealias ListResponse = PageEnvelope<Row>
    public static let pagination = PageNumberPagination(pageSize: 10)
    public static func listEndpoint(for request: Int) -> Endpoint {
        Endpoint(.get, "rows").setting(query: "list", to: String(request))
    }
}

/// Answers every request at once, from memory, with the same pre-encoded body: what is measured is
/// ResourceKit's cost and decoding, not a transport's.
public struct InstantTransport: HTTPTransport {
    public let body: Data

    public init(body: Data) { self.body = body }

    public init(_ value: some Encodable) throws {
        body = try JSONEncoder().encode(value)
    }

    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        HTTPResponse(statusCode: 200, body: body, url: request.url)
    }
}
