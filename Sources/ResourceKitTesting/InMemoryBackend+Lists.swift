import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// A collection's list route: PocketBase's pages, or offset and limit with a `Link` header.
extension InMemoryBackend {
    func list(_ name: String, query: [String: String], url: URL?, in state: State) -> HTTPResponse {
        guard let collection = state.collections[name] else { return Self.notFound() }
        let total = collection.order.count
        if query["offset"] != nil || query["limit"] != nil {
            let offset = max(0, Int(query["offset"] ?? "") ?? 0)
            let limit = min(1000, max(1, Int(query["limit"] ?? "") ?? 30))
            let ids = collection.order.dropFirst(offset).prefix(limit)
            var headers: HTTPHeaders = ["X-Total-Count": String(total)]
            // offset < total first, so offset + limit cannot overflow.
            if offset < total, offset + limit < total, let url,
                var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
            {
                var items = (components.queryItems ?? []).filter { $0.name != "offset" && $0.name != "limit" }
                items += [
                    URLQueryItem(name: "offset", value: String(offset + limit)),
                    URLQueryItem(name: "limit", value: String(limit)),
                ]
                components.queryItems = items
                // A relative reference, as many servers send; clients resolve it against the request URL.
                headers["Link"] =
                    "<\(components.percentEncodedPath)?\(components.percentEncodedQuery ?? "")>; rel=\"next\""
            }
            return Self.json(200, .array(records(ids, of: collection, named: name)), headers: headers)
        }
        // As PocketBase 0.40: an empty value is none; a page or perPage that is not a number (or past 64 bits), or
        // a skipTotal that is not one of Go's booleans, is a 400; a perPage of 0 or less, or none, is 30.
        func parameter<Value>(_ name: String, _ parse: (String) -> Value?) -> Value?? {
            guard let text = query[name], !text.isEmpty else { return .some(nil) }
            return parse(text).map { .some($0) } ?? .none
        }
        let booleans = [
            "1": true, "t": true, "T": true, "TRUE": true, "true": true, "True": true,
            "0": false, "f": false, "F": false, "FALSE": false, "false": false, "False": false,
        ]
        guard let requestedPage = parameter("page", { Int64($0) }),
            let requestedPerPage = parameter("perPage", { Int64($0) }),
            let skipTotalValue = parameter("skipTotal", { booleans[$0] })
        else {
            return Self.error(400, "Something went wrong while processing your request.")
        }
        let page = Int(clamping: max(1, requestedPage ?? 1))
        let perPage = (requestedPerPage ?? 30) <= 0 ? 30 : Int(min(1000, requestedPerPage ?? 30))
        let (skipped, overflow) = (page - 1).multipliedReportingOverflow(by: perPage)
        let ids = collection.order.dropFirst(overflow ? total : skipped).prefix(perPage)
        let skipTotal = skipTotalValue ?? false
        let envelope: JSONValue = .object([
            "page": .int(page),
            "perPage": .int(perPage),
            "totalItems": .int(skipTotal ? -1 : total),
            "totalPages": .int(skipTotal ? -1 : (total + perPage - 1) / perPage),
            "items": .array(records(ids, of: collection, named: name)),
        ])
        return Self.json(200, envelope)
    }

    func records(_ ids: some Sequence<String>, of collection: Collection, named name: String) -> [JSONValue] {
        ids.compactMap { collection.records[$0].map { .object(Self.withSystemFields($0, name)) } }
    }
}
