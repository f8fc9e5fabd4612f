/// The value a conditional read keeps when the server answers `304 Not Modified`.
@usableFromInline struct KeptValue<Value: Sendable>: Sendable {
    @usableFromInline var value: Value
    @usableFromInline var validators: Validators

    @inlinable init(value: Value, validators: Validators) {
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
    @usableFromInline nonisolated func read<Response: Decodable, Value: Sendable>(
        _ endpoint: Endpoint,
        as type: Response.Type,
        keeping kept: KeptValue<Value>?,
        map: (Response) throws(NetworkError) -> Value
    ) async throws(NetworkError) -> (value: Value, validators: Validators?) {
        let response = try await response(for: endpoint, unlessMatching: kept?.validators)
        if response.statusCode == 304, let kept {
            return (kept.value, Validators(response.headers) ?? kept.validators)
        }
        let value = try map(try decode(Response.self, from: response))
        return (value, Validators(response.headers))
    }
}
