import Foundation

/// What makes two requests interchangeable, as a structured value: method, percent-encoded path, the query
/// items in order, and the headers by lower-cased name. Two different endpoints never compare equal, whatever
/// characters their parts contain (no separator can be forged).
// `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) uses the key, so it is part of the
// module's API surface.
@usableFromInline struct RequestKey: Hashable, Sendable {
    struct QueryItem: Hashable, Sendable {
        var name: String
        var value: String?
    }

    struct Header: Hashable, Sendable {
        var name: String
        var value: String
    }

    var method: String
    @usableFromInline var path: String
    var query: [QueryItem]
    var headers: [Header]
}

extension Endpoint {
    /// The key of an endpoint whose requests may be shared; `nil` for one with a body, or one that cannot be
    /// sent, which never is.
    @usableFromInline var requestKey: RequestKey? {
        guard body == nil, problem == nil else { return nil }
        let headers = self.headers.map { RequestKey.Header(name: $0.name.lowercased(), value: $0.value) }
        return RequestKey(
            method: method.rawValue,
            path: path,
            query: queryItems.map { RequestKey.QueryItem(name: $0.name, value: $0.value) },
            headers: headers.sorted { ($0.name, $0.value) < ($1.name, $1.value) })
    }
}
