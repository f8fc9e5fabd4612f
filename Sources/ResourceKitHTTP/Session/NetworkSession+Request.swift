#if canImport(FoundationNetworking)
    package import Foundation
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
    /// ``Configuration/defaultHeaders``, then the body's content type, then the endpoint's headers — names compared
    /// case-insensitively, so an explicit `Content-Type` is never overwritten.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The request.
    /// - Throws: ``NetworkError/invalidURL(_:)``, ``NetworkError/encoding(_:)``,
    ///   ``NetworkError/invalidRequest(_:)`` for an endpoint that cannot be sent (an empty id, a method or
    ///   header name that is not an RFC 9110 token, a header value with CR, LF or NUL),
    ///   ``NetworkError/file(_:)`` for a file body that cannot be read, or what the session's base-URL provider
    ///   throws.
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
                if let fixedBase {
                    base = try fixedBase.get().url
                } else {
                    base = try await baseURLProvider.resolveBaseURL()
                }
            }
        } else if let fixedBase {
            // A `URL` or `String` provider answers the same every time: parsed once, when the session was made.
            let parts = try fixedBase.get()
            base = parts.url
            url = try URLBuilder.url(base: parts, path: endpoint.path, query: endpoint.queryItems)
        } else {
            let resolved = try await baseURLProvider.resolveBaseURL()
            base = resolved
            url = try URLBuilder.url(base: resolved, path: endpoint.path, query: endpoint.queryItems)
        }
        var request = URLRequest(url: url)
        // `GET` is what a new request has; setting it again costs a normalization of the method on Linux.
        if endpoint.method != .get {
            try HeaderValidation.check(method: endpoint.method.rawValue)
            request.httpMethod = endpoint.method.rawValue
        }
        // The session enforces the deadline; the transport's own timer must not end the request first
        // (Linux truncates it to whole seconds, so 0.8 would mean at once): whole seconds, rounded up.
        // The call's own limit (the endpoint's, else the session's, which a streamed upload does not take).
        let inactivity = NetworkSession.deadline(endpoint.inactivityTimeout)
        let callLimit = endpoint.timeLimit ?? (Self.uploads(endpoint) ? nil : timeLimit)
        if let limit = inactivity ?? NetworkSession.deadline(callLimit) {
            request.timeoutInterval = limit.seconds.rounded(.up)
        }

        if endpoint.body == nil, endpoint.headers.count == 0, let fixedHeaders {
            // The headers are the defaults alone, merged and checked when the session was made.
            request.allHTTPHeaderFields = try fixedHeaders.get()
            return (request, base)
        }
        var headers = NetworkSession.libraryHeaders
        if defaultHeadersCarryCredentials, !credentialScope.contains(url, base: base) {
            // A credential among the session's default headers stays on the origins it is meant for too.
            var defaults = defaultHeaders
            for name in Redirect.credentialHeaders { defaults[name] = nil }
            headers = headers.merging(defaults)
        } else {
            headers = headers.merging(defaultHeaders)
        }
        if let body = endpoint.body {
            if body.streams || endpoint.progress != nil {
                let (upload, contentType) = try uploadBody(body, progress: endpoint.progress)
                // The stream every hop's own is made from (`follow`); sent as it is by a caller of
                // `makeURLRequest(for:)`.
                request.httpBodyStream = BodyInputStream(upload, claimed: nil)
                headers["Content-Type"] = contentType
            } else {
                let (data, contentType) = try encode(body)
                request.httpBody = data
                headers["Content-Type"] = contentType
            }
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

    /// The headers every request starts from, before the session's defaults.
    static var libraryHeaders: HTTPHeaders {
        ["Accept": "application/json", "User-Agent": NetworkSession.defaultUserAgent]
    }

    /// The header fields of a request that adds none to the defaults (no endpoint header, no body), merged
    /// and checked once; `nil` when the defaults carry a credential, whose presence depends on the URL.
    static func fixedHeaderFields(
        defaults: HTTPHeaders,
        carryCredentials: Bool
    ) -> Result<[String: String], NetworkError>? {
        guard !carryCredentials else { return nil }
        let headers = libraryHeaders.merging(defaults)
        var fields: [String: String] = [:]
        fields.reserveCapacity(headers.count)
        for field in headers {
            do throws(NetworkError) {
                try HeaderValidation.check(name: field.name, value: field.value)
            } catch {
                return .failure(error)
            }
            fields[field.name] = field.value
        }
        return .success(fields)
    }

    /// A body as the bytes and content type it is sent with, for the outbox to keep.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` for a body that streams (a file, a form with files, a
    ///   stream): the outbox does not copy files into its records, nor hold a stream it cannot read again.
    package nonisolated func encodeBody(_ body: RequestBody) throws(NetworkError) -> (body: Data, contentType: String) {
        guard !body.streams else { throw .invalidRequest("a body that streams is not kept to be sent later") }
        return try encode(body)
    }

    /// A body as the pieces of a streamed upload, and its content type. Files are checked now: the request
    /// fails before anything is sent when one cannot be read.
    private nonisolated func uploadBody(
        _ body: RequestBody, progress: (any ProgressReporting)?
    ) throws(NetworkError) -> (UploadBody, String) {
        switch body.kind {
        case .file(let url, let contentType):
            let size = try UploadPiece.size(ofFileAt: url)
            return (
                UploadBody(pieces: [.composed(.file(url, size: size, delimiter: nil))], progress: progress), contentType
            )
        case .stream(let stream, let contentType):
            return (UploadBody(pieces: [.stream(stream)], progress: progress), contentType)
        case .composed(let composed):
            return (
                UploadBody(pieces: try composed.pieces().map(UploadBody.Piece.composed), progress: progress),
                composed.contentType
            )
        case .json, .data, .form:
            let (data, contentType) = try encode(body)
            return (UploadBody(pieces: [.composed(.bytes(data))], progress: progress), contentType)
        }
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
        case .composed(let composed):
            return (try composed.encoded(), composed.contentType)
        case .file, .stream:
            // Streamed by `uploadBody`, never encoded in memory.
            throw .invalidRequest("a body that streams is not encoded in memory")
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

    private static let pathAllowedASCII = ASCIITable(pathAllowed)

    static func url(base: URL, path: String, query: [URLQueryItem]) throws(NetworkError) -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            throw .invalidURL("base URL '\(base.absoluteString)' cannot be parsed")
        }
        let basePath = components.percentEncodedPath
        let relative = sanitizePath(path)
        // Exactly one slash at the join, however many either side has (`/api//` + `//posts` is `/api/posts`).
        // Slashes inside the base path or the endpoint's path are kept as they are.
        let trimmedBase = trimmingTrailingSlashes(basePath)
        let trimmedRelative = String(relative.drop { $0 == "/" })
        if !trimmedRelative.isEmpty {
            components.percentEncodedPath = trimmedBase + "/" + trimmedRelative
        }
        return try finish(components, query: query, description: path)
    }

    /// A base URL taken apart once: what ``url(base:path:query:)`` works out from it on every request.
    struct Base: Sendable {
        var url: URL
        /// `nil` when `URLComponents` cannot parse `url`: every relative request fails then.
        var components: URLComponents?
        /// The percent-encoded path without its trailing slashes.
        var trimmedPath = ""
        /// Everything before the path (`scheme://authority`) when the URL has no query and no fragment, so a
        /// request's URL is this, its path and its query as text, parsed once.
        var prefix: String?

        init(_ url: URL) {
            self.url = url
            components = URLComponents(url: url, resolvingAgainstBaseURL: true)
            guard let components else { return }
            trimmedPath = URLBuilder.trimmingTrailingSlashes(components.percentEncodedPath)
            if components.percentEncodedQuery == nil, components.percentEncodedFragment == nil {
                var bare = components
                bare.percentEncodedPath = ""
                prefix = bare.string
            }
        }
    }

    /// The URL of `path` and `query` on a base taken apart beforehand; the same URL as
    /// ``url(base:path:query:)`` on `base.url` gives.
    static func url(base: Base, path: String, query: [URLQueryItem]) throws(NetworkError) -> URL {
        guard let baseComponents = base.components else {
            throw .invalidURL("base URL '\(base.url.absoluteString)' cannot be parsed")
        }
        let relative = String(sanitizePath(path).drop { $0 == "/" })
        guard let prefix = base.prefix else {
            var components = baseComponents
            if !relative.isEmpty { components.percentEncodedPath = base.trimmedPath + "/" + relative }
            return try finish(components, query: query, description: path)
        }
        var text = prefix
        text += relative.isEmpty ? baseComponents.percentEncodedPath : base.trimmedPath + "/" + relative
        if !query.isEmpty {
            text += "?"
            text += encodedQuery(query)
        }
        guard let url = URL(string: text) else { throw .invalidURL("'\(path)' does not form a URL") }
        return url
    }

    static func trimmingTrailingSlashes(_ path: String) -> String {
        var end = path.endIndex
        while end > path.startIndex, path[path.index(before: end)] == "/" { end = path.index(before: end) }
        return String(path[..<end])
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
            let encoded = encodedQuery(query)
            if let existing = components.percentEncodedQuery, !existing.isEmpty {
                components.percentEncodedQuery = existing + "&" + encoded
            } else {
                components.percentEncodedQuery = encoded
            }
        }
        guard let url = components.url else { throw .invalidURL("'\(description)' does not form a URL") }
        return url
    }

    static func encodedQuery(_ query: [URLQueryItem]) -> String {
        query.map { item in
            encodeQueryComponent(item.name) + (item.value.map { "=" + encodeQueryComponent($0) } ?? "")
        }.joined(separator: "&")
    }

    private static let queryAllowedASCII = ASCIITable(queryAllowed)

    static func encodeQueryComponent(_ text: String) -> String {
        // Most names and values need no escape: then `addingPercentEncoding` would return them as they are.
        if queryAllowedASCII.containsAll(text.utf8) { return text }
        return text.addingPercentEncoding(withAllowedCharacters: queryAllowed) ?? ""
    }

    static func encodeFormComponent(_ text: String) -> String {
        encodeQueryComponent(text)
    }

    /// Keeps valid `%XX` escapes and `/`, and percent-encodes every other character not allowed in a path,
    /// so the result is always a valid percent-encoded path.
    static func sanitizePath(_ path: String) -> String {
        // Most paths are plain ASCII that needs no escape (no `%` either): they come back as they are.
        if pathAllowedASCII.containsAll(path.utf8) { return path }
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
