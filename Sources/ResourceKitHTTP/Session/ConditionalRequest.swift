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

/// The value a conditional read keeps when the server answers `304 Not Modified`.
@usableFromInline package struct KeptValue<Value: Sendable>: Sendable {
    @usableFromInline var value: Value
    @usableFromInline var validators: Validators

    @inlinable package init(value: Value, validators: Validators) {
        self.value = value
        self.validators = validators
    }
}

extension NetworkSession {
    /// Sends a read that, given the validators of the value held, may be answered `304 Not Modified`; then
    /// `kept` is returned without decoding anything.
    ///
    /// - Returns: The value, and the validators that go with it (`nil` when the response had none).
    // `@usableFromInline` (not inlinable): the inlinable `Resource.read` calls it; part of the API surface.
    @usableFromInline package nonisolated func read<Response: Decodable, Value: Sendable>(
        _ endpoint: Endpoint,
        as type: Response.Type,
        keeping kept: KeptValue<Value>?,
        map: (Response) throws(NetworkError) -> Value
    ) async throws(NetworkError) -> (value: Value, validators: Validators?) {
        var endpoint = endpoint
        if let kept {
            if let tag = kept.validators.entityTag {
                endpoint = endpoint.setting(header: "If-None-Match", to: tag)
            } else if let date = kept.validators.lastModified {
                endpoint = endpoint.setting(header: "If-Modified-Since", to: date)
            }
        }
        let (request, base) = try await buildRequest(for: endpoint)
        var exchange = Exchange(
            request: request, base: base, ownCredentials: Redirect.credentials(in: endpoint.headers),
            redirects: endpoint.redirects ?? redirects, retry: endpoint.retry ?? retry,
            deadline: Self.deadline(endpoint.timeLimit ?? timeLimit))
        exchange.acceptsNotModified = kept != nil
        let response = try await perform(exchange)
        if response.statusCode == 304, let kept {
            return (kept.value, Validators(response.headers) ?? kept.validators)
        }
        let decoded = try decode(Response.self, from: response)
        let value = try map(decoded)
        return (value, Validators(response.headers))
    }
}
