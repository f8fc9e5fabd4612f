/// What a response said about its version: `ETag` and `Last-Modified`, sent back as `If-None-Match` and
/// `If-Modified-Since` so that the server can answer `304 Not Modified` instead of the body.
// `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) carries them, part of the API surface.
@usableFromInline package struct Validators: Sendable, Equatable {
    package var entityTag: String?
    package var lastModified: String?

    /// Validators kept from an earlier answer (a persisted entry), or `nil` when there are none.
    package init?(entityTag: String?, lastModified: String?) {
        self.entityTag = entityTag.flatMap { $0.isEmpty ? nil : $0 }
        self.lastModified = lastModified.flatMap { $0.isEmpty ? nil : $0 }
        if self.entityTag == nil, self.lastModified == nil { return nil }
    }

    /// The validators of a response, or `nil` when it has none.
    package init?(_ headers: HTTPHeaders) {
        entityTag = headers["ETag"].flatMap { $0.isEmpty ? nil : $0 }
        lastModified = headers["Last-Modified"].flatMap { $0.isEmpty ? nil : $0 }
        if entityTag == nil, lastModified == nil { return nil }
    }
}

extension NetworkSession {
    /// Sends a read conditional on `validators` (`If-None-Match` with the `ETag`, else `If-Modified-Since`), and
    /// returns its response: a `304 Not Modified` (no body) when the server still has that version, then as
    /// any other answer. Without validators, the plain ``response(for:)`` minus its upload path.
    package nonisolated func response(
        for endpoint: Endpoint, unlessMatching validators: Validators?
    ) async throws(NetworkError) -> HTTPResponse {
        var endpoint = endpoint
        if let validators {
            if let tag = validators.entityTag {
                endpoint = endpoint.setting(header: "If-None-Match", to: tag)
            } else if let date = validators.lastModified {
                endpoint = endpoint.setting(header: "If-Modified-Since", to: date)
            }
        }
        let (request, base) = try await buildRequest(for: endpoint)
        var exchange = Exchange(
            request: request, base: base, ownCredentials: Redirect.credentials(in: endpoint.headers),
            redirects: endpoint.redirects ?? redirects, retry: endpoint.retry ?? retry,
            deadline: Self.deadline(endpoint.timeLimit ?? timeLimit))
        exchange.acceptsNotModified = validators != nil
        return try await perform(exchange)
    }
}
