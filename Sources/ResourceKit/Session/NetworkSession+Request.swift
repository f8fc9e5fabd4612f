#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension NetworkSession {
    /// Builds the `URLRequest` for an endpoint: base URL, path, query, headers and body. Adapters have not
    /// run yet.
    ///
    /// Headers are layered: library defaults (`Accept: application/json` and
    /// `User-Agent: ResourceKit/<version>`), then the session's
    /// ``defaultHeaders``, then the body's content type, then the endpoint's headers — names compared
    /// case-insensitively, so an explicit `Content-Type` is never overwritten.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The request.
    /// - Throws: ``NetworkError/invalidURL(_:)``, ``NetworkError/encoding(_:)``, or
    ///   ``NetworkError/invalidRequest(_:)`` for an endpoint that cannot be sent (an empty id, a header name
    ///   that is not an RFC 9110 token, a header value with CR, LF or NUL).
    public nonisolated func makeURLRequest(for endpoint: Endpoint) async throws(NetworkError) -> URLRequest {
        try await buildRequest(for: endpoint).request
    }

    /// Builds the request and returns the base URL it was resolved against, if one was needed (an absolute
    /// endpoint needs one only when credentials may be added, to know the base URL's origin).
    nonisolated func buildRequest(for endpoint: Endpoint) async throws(NetworkError) -> (
        request: URLRequest, base: URL?
    ) {
        if let problem = endpoint.problem { throw .invalidRequest(problem) }
        let url: URL
        var base: URL?
        if Endpoint.isAbsolute(endpoint.path) {
            url = try URLBuilder.url(absolute: endpoint.path, query: endpoint.queryItems)
            if !adapters.isEmpty || authentication != nil || defaultHeadersCarryCredentials {
                base = try await baseURLProvider.resolveBaseURL()
            }
        } else {
            let resolved = try await baseURLProvider.resolveBaseURL()
            base = resolved
            url = try URLBuilder.url(base: resolved, path: endpoint.path, query: endpoint.queryItems)
        }
        var request = URLRequest(url: url)
        request.httpMethod = endpoint.method.rawValue
        // The session enforces the deadline; the transport's own timer must not end the request first
        // (Linux truncates it to whole seconds, so 0.8 would mean at once): whole seconds, rounded up.
        if let limit = NetworkSession.deadline(endpoint.timeLimit) {
            request.timeoutInterval = limit.seconds.rounded(.up)
        }

        var headers: HTTPHeaders = ["Accept": "application/json", "User-Agent": NetworkSession.defaultUserAgent]
        if defaultHeadersCarryCredentials, !credentialScope.contains(url, base: base) {
            // A credential among the session's default headers stays on the origins it is meant for too.
            var defaults = defaultHeaders
            for name in Redirect.credentialHeaders { defaults[name] = nil }
            headers = headers.merging(defaults)
        } else {
            headers = headers.merging(defaultHeaders)
        }
        if let body = endpoint.body {
            let (data, contentType) = try encode(body)
            request.httpBody = data
            headers["Content-Type"] = contentType
        }
        headers = headers.merging(endpoint.headers)
        // One assignment instead of a `setValue` per header: each one is a bridged call on Linux.
        var fields: [String: String] = [:]
        fields.reserveCapacity(headers.count)
        for field in headers {
            try HeaderValidation.check(name: field.name, value: field.value)
            fields[field.name] = field.value
        }
        request.allHTTPHeaderFields = fields
        return (request, base)
    }

    private nonisolated func encode(_ body: RequestBody) throws(NetworkError) -> (Data, String) {
        switch body.kind {
        case .json(let value):
            do {
                return (try encoder.encode(value), "application/json")
            } catch {
                throw .encoding(String(describing: error))
            }
        case .data(let data, let contentType):
            return (data, contentType)
        case .form(let items):
            let text = items.map { item in
                URLBuilder.encodeFormComponent(item.name) + "=" + URLBuilder.encodeFormComponent(item.value ?? "")
            }.joined(separator: "&")
            return (Data(text.utf8), "application/x-www-form-urlencoded")
        }
    }
}

/// Joins base URLs, paths and queries with `URLComponents`, never by string concatenation of whole URLs.
enum URLBuilder {
    /// RFC 3986 unreserved characters: everything else in a query name or value is percent-encoded,
    /// so `&`, `=`, `+` and spaces arrive as they were.
    private static let queryAllowed = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static let pathAllowed: CharacterSet = {
        var set = CharacterSet.urlPathAllowed
        set.remove("%")
        return set
    }()

    static func url(base: URL, path: String, query: [URLQueryItem]) throws(NetworkError) -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            throw .invalidURL("base URL '\(base.absoluteString)' cannot be parsed")
        }
        let basePath = components.percentEncodedPath
        let relative = sanitizePath(path)
        // Exactly one slash at the join, however many either side has (`/api//` + `//posts` is `/api/posts`).
        // Slashes inside the base path or the endpoint's path are kept as they are.
        let trimmedBase = String(basePath.reversed().drop { $0 == "/" }.reversed())
        let trimmedRelative = String(relative.drop { $0 == "/" })
        if !trimmedRelative.isEmpty {
            components.percentEncodedPath = trimmedBase + "/" + trimmedRelative
        }
        return try finish(components, query: query, description: path)
    }

    static func url(absolute: String, query: [URLQueryItem]) throws(NetworkError) -> URL {
        guard let components = URLComponents(string: absolute), components.host != nil else {
            throw .invalidURL("'\(absolute)' is not an absolute URL")
        }
        return try finish(components, query: query, description: absolute)
    }

    private static func finish(
        _ components: URLComponents,
        query: [URLQueryItem],
        description: String
    ) throws(NetworkError) -> URL {
        var components = components
        if !query.isEmpty {
            let encoded = query.map { item in
                encodeQueryComponent(item.name) + (item.value.map { "=" + encodeQueryComponent($0) } ?? "")
            }.joined(separator: "&")
            if let existing = components.percentEncodedQuery, !existing.isEmpty {
                components.percentEncodedQuery = existing + "&" + encoded
            } else {
                components.percentEncodedQuery = encoded
            }
        }
        guard let url = components.url else { throw .invalidURL("'\(description)' does not form a URL") }
        return url
    }

    static func encodeQueryComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryAllowed) ?? ""
    }

    static func encodeFormComponent(_ text: String) -> String {
        encodeQueryComponent(text)
    }

    /// Keeps valid `%XX` escapes and `/`, and percent-encodes every other character not allowed in a path,
    /// so the result is always a valid percent-encoded path.
    static func sanitizePath(_ path: String) -> String {
        var result = ""
        result.reserveCapacity(path.utf8.count)
        let scalars = Array(path.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "%", index + 2 < scalars.count, isHex(scalars[index + 1]), isHex(scalars[index + 2]) {
                result.unicodeScalars.append(contentsOf: scalars[index...(index + 2)])
                index += 3
                continue
            }
            if pathAllowed.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += String(scalar).addingPercentEncoding(withAllowedCharacters: pathAllowed) ?? ""
            }
            index += 1
        }
        return result
    }

    private static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F": true
        default: false
        }
    }
}
