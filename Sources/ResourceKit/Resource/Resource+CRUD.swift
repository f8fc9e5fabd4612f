extension Resource where Remote: Readable {
    /// Reads the value.
    ///
    /// States: `loading(previous:)`, then `available` or `failure(_, previous:)`. Concurrent reads of the
    /// same endpoint share one request.
    /// - Parameters:
    ///   - request: What to read.
    ///   - policy: Whether an already loaded value for the same request may be returned without a request.
    /// - Returns: The value read.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func read(_ request: Remote.ReadRequest, policy: ReadPolicy = .always) async throws(NetworkError) -> Value {
        let endpoint = try Remote.readEndpoint(for: request)
        let session = session
        let outcome = await perform { machine, call, waiter in
            machine.askRead(call, waiter, key: endpoint.requestKey, policy: policy) { _ in
                do throws(NetworkError) {
                    let response = try await session.send(endpoint, as: Remote.ReadResponse.self)
                    return .success(.value(try Remote.value(fromRead: response)))
                } catch {
                    return .failure(error)
                }
            }
        }
        return try Self.value(of: outcome.get())
    }

    /// Reads the value with the request derived from the current value (`Void` requests need none).
    /// - Parameter policy: Whether an already loaded value may be returned without a request.
    /// - Returns: The value read.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when no request can be derived, or the read's error.
    @discardableResult
    public func read(policy: ReadPolicy = .always) async throws(NetworkError) -> Value {
        guard let request = Remote.readRequest(from: state.value) else {
            throw .invalidRequest("\(Remote.self) cannot derive a read request from the current state")
        }
        return try await read(request, policy: policy)
    }
}

extension Resource where Remote: Creatable {
    /// Creates the value on the server; the resource then holds the created value.
    /// - Parameter request: What to create.
    /// - Returns: The created value.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func create(_ request: Remote.CreateRequest) async throws(NetworkError) -> Value {
        let endpoint = try Remote.createEndpoint(for: request)
        let session = session
        let outcome = try await mutate { () async throws(NetworkError) -> Outcome in
            let response = try await session.send(endpoint, as: Remote.CreateResponse.self)
            return .value(try Remote.value(fromCreate: response))
        }
        return try Self.value(of: outcome)
    }

    /// Creates the current value on the server.
    /// - Returns: The created value.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when no request can be derived, or the create's error.
    @discardableResult
    public func create() async throws(NetworkError) -> Value {
        guard let request = Remote.createRequest(from: state.value) else {
            throw .invalidRequest("\(Remote.self) cannot derive a create request from the current state")
        }
        return try await create(request)
    }
}

extension Resource where Remote: Updatable {
    /// Updates the value on the server; the resource then holds the updated value.
    /// - Parameter request: The update.
    /// - Returns: The updated value.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func update(_ request: Remote.UpdateRequest) async throws(NetworkError) -> Value {
        let endpoint = try Remote.updateEndpoint(for: request)
        let session = session
        let outcome = try await mutate { () async throws(NetworkError) -> Outcome in
            let response = try await session.send(endpoint, as: Remote.UpdateResponse.self)
            return .value(try Remote.value(fromUpdate: response))
        }
        return try Self.value(of: outcome)
    }

    /// Sends the current value as an update.
    /// - Returns: The updated value.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when there is no value, or the update's error.
    @discardableResult
    public func update() async throws(NetworkError) -> Value {
        guard let value = state.value, let request = Remote.updateRequest(from: value) else {
            throw .invalidRequest("\(Remote.self) cannot derive an update request from the current state")
        }
        return try await update(request)
    }
}

extension Resource where Remote: Deletable {
    /// Deletes the value on the server.
    ///
    /// After a hard delete the state is `.idle` and this returns `nil`; after a soft delete it holds, and
    /// returns, the value ``Deletable/value(fromDelete:)`` gives.
    /// - Parameter request: What to delete.
    /// - Returns: The value after a soft delete, or `nil`.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func delete(_ request: Remote.DeleteRequest) async throws(NetworkError) -> Value? {
        let endpoint = try Remote.deleteEndpoint(for: request)
        let session = session
        let outcome = try await mutate { () async throws(NetworkError) -> Outcome in
            let response = try await session.send(endpoint, as: Remote.DeleteResponse.self)
            return try Remote.value(fromDelete: response).map { .value($0) } ?? .removed
        }
        if case .value(let value) = outcome { return value }
        return nil
    }

    /// Deletes the current value.
    /// - Returns: The value after a soft delete, or `nil`.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when there is no value, or the delete's error.
    @discardableResult
    public func delete() async throws(NetworkError) -> Value? {
        guard let value = state.value, let request = Remote.deleteRequest(from: value) else {
            throw .invalidRequest("\(Remote.self) cannot derive a delete request from the current state")
        }
        return try await delete(request)
    }
}

extension Resource {
    typealias Outcome = ResourceOutcome<Value>

    /// Runs a create, update or delete after every mutation asked before it.
    fileprivate func mutate(
        _ send: @escaping @Sendable () async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> Outcome {
        let result = await perform { machine, call, waiter in
            machine.askMutation(call, waiter) { _ in
                do throws(NetworkError) {
                    return .success(try await send())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    fileprivate static func value(of outcome: Outcome) throws(NetworkError) -> Value {
        guard case .value(let value) = outcome else {
            throw .invalidRequest("\(Remote.self): the operation returned no value")
        }
        return value
    }
}
