extension Resource where Remote: Readable {
    /// Reads the value.
    ///
    /// States: `loading(previous:)`, then `available` or `failure(_, previous:)`. Concurrent reads of the
    /// same endpoint share one request. When the value shown was loaded by the same request with an `ETag`
    /// or `Last-Modified`, the read is conditional, and a `304 Not Modified` keeps the value without decoding.
    /// - Parameters:
    ///   - request: What to read.
    ///   - policy: Whether a loaded (``ReadPolicy/skipIfLoaded``) or fresh (``ReadPolicy/skipIfFresh``,
    ///     ``ReadPolicy/staleWhileRevalidate``) value may be returned without waiting for a request.
    /// - Returns: The value read.
    /// - Throws: ``NetworkError``; ``NetworkError/invalidRequest(_:)`` when a ``ResourceStore``'s resource is
    ///   asked to read another item than its own.
    // `@inlinable`, so that a client specializes the operation core for its own `Remote` type (unspecialized,
    // a read spends a third of its time in generic metadata lookups): the body and what it reaches are part
    // of the module's API surface.
    @inlinable
    @discardableResult
    public func read(_ request: Remote.ReadRequest, policy: ReadPolicy = .always) async throws(NetworkError) -> Value {
        let endpoint = try Remote.readEndpoint(for: request)
        let key = endpoint.requestKey
        if let link, link.readKey != key {
            throw .invalidRequest("a ResourceStore's resource reads its own item only; ask the store for the other one")
        }
        if let maxAge = policy.freshnessWindow {
            let now = session.now
            let freshness = storage.withLock {
                $0.machine.freshness(of: key, now: now, maxAge: maxAge ?? Remote.maxAge)
            }
            switch freshness {
            case .fresh(let value):
                answeredFromMemory()
                return value
            case .stale(let value) where policy.revalidates:
                answeredFromMemory()
                revalidate(request)
                return value
            case .stale, .missing: break
            }
        }
        let session = session
        let outcome = await perform { machine, call, waiter, ranks in
            machine.askRead(call, waiter, key: key, policy: policy, ranks: &ranks) { kept in
                do throws(NetworkError) {
                    let answer = try await session.read(
                        endpoint, as: Remote.ReadResponse.self, keeping: kept, map: Remote.value(fromRead:))
                    guard let validators = answer.validators else { return .success(.value(answer.value)) }
                    return .success(.validated(answer.value, validators))
                } catch {
                    return .failure(error)
                }
            }
        }
        return try Self.value(of: outcome.get())
    }

    /// Tells the session's diagnostics that a read was answered from memory by its policy (`cacheHit`).
    @inlinable func answeredFromMemory() {
        let watcher = self.watcher
        if watcher.isActive { watcher.answeredFromMemory() }
    }

    /// Reads again in the background; the state shows the read from now on.
    @usableFromInline func revalidate(_ request: Remote.ReadRequest) {
        let body: @Sendable () async -> Void = { [self] in _ = try? await read(request, policy: .always) }
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            Task.immediate(operation: body)
        } else {
            Task(operation: body)
        }
    }

    /// Reads the value with the request derived from the current value (`Void` requests need none).
    /// - Parameter policy: Whether an already loaded value may be returned without a request.
    /// - Returns: The value read.
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when no request can be derived, or the read's error.
    // `@inlinable`, like `read(_:policy:)`, so that the client's specialization reaches the core from here.
    @inlinable
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
        let outcome = try await mutate(creates: true) { () async throws(NetworkError) -> Outcome in
            // The answer's validators are the created value's, as an update's are.
            let response = try await session.response(for: endpoint)
            let value = try Remote.value(fromCreate: session.decode(Remote.CreateResponse.self, from: response))
            guard let validators = Validators(response.headers) else { return .value(value) }
            return .validated(value, validators)
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
    ///
    /// An update kept by the store's outbox (the server unreachable; see ``update(_:optimistic:)``) shows
    /// nothing meanwhile, so there is no value to return: it throws `NetworkError.queued(_:)`, with the kept
    /// change's id. Give an optimistic value to have the call return it instead.
    /// - Parameter request: The update.
    /// - Returns: The updated value.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func update(_ request: Remote.UpdateRequest) async throws(NetworkError) -> Value {
        try await update(request, showing: nil)
    }

    /// Updates the value on the server, showing `optimistic` at once.
    ///
    /// The resource, and in a ``ResourceStore`` every live resource and list holding the item, show
    /// `optimistic` from this call on. When the server answers, they show its answer; when the update fails
    /// or is cancelled, the optimistic value goes away and each shows what it would show without it: the
    /// value before, or the next optimistic change still pending. Only this resource shows the failure. In a
    /// store that keeps this type's changes offline (ResourceKitPersistence's `OfflineQueueing.resources`),
    /// an update the server cannot be reached for is kept in the outbox: the call returns `optimistic`, which
    /// every holder shows until the outbox sends the update (the outbox's `pending` lists it).
    /// - Parameters:
    ///   - request: The update.
    ///   - optimistic: The value to show until the server answers.
    /// - Returns: The updated value.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func update(_ request: Remote.UpdateRequest, optimistic: Value) async throws(NetworkError) -> Value {
        try await update(request, showing: .value(optimistic))
    }

    private func update(_ request: Remote.UpdateRequest, showing: ItemFact<Value>?) async throws(NetworkError) -> Value
    {
        let endpoint = try Remote.updateEndpoint(for: request)
        let session = session
        let mutations = link?.mutations
        let outcome = try await mutate(optimistic: showing) { () async throws(NetworkError) -> Outcome in
            func send(_ endpoint: Endpoint) async throws(NetworkError) -> Outcome {
                // The answer's validators are the new value's (RFC 9110 §9.3.4): what the next change of it is
                // made on, and what a later read sends back.
                let response = try await session.response(for: endpoint)
                let value = try Remote.value(fromUpdate: session.decode(Remote.UpdateResponse.self, from: response))
                guard let validators = Validators(response.headers) else { return .value(value) }
                return .validated(value, validators)
            }
            return try await mutations.send(
                .update, showing: showing?.value, base: { self.mutationBase() }, endpoint, session, send)
        }
        // Kept for later (the outbox): every holder shows the optimistic value, and it is the answer for now.
        // Kept with nothing to show, the caller hears that it was kept.
        if case .handedOff(let error) = outcome {
            guard case .value(let shown)? = showing else { throw error }
            return shown
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
        try await delete(request, optimistic: false)
    }

    /// Deletes the value on the server; with `optimistic`, shows it deleted at once.
    ///
    /// With `optimistic`, the resource is `.idle` (`loading(previous: nil)` while the request is in flight),
    /// and in a ``ResourceStore`` every list holding the item leaves it out, until the server answers; a
    /// failed or cancelled delete brings it back everywhere. A delete kept by the store's outbox (the server
    /// unreachable; see ``update(_:optimistic:)``) returns `nil`, and every holder shows the item deleted
    /// until it is sent.
    /// - Parameters:
    ///   - request: What to delete.
    ///   - optimistic: Whether to show the deletion before the server answers.
    /// - Returns: The value after a soft delete, or `nil`.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func delete(_ request: Remote.DeleteRequest, optimistic: Bool) async throws(NetworkError) -> Value? {
        let endpoint = try Remote.deleteEndpoint(for: request)
        let session = session
        let mutations = link?.mutations
        let outcome = try await mutate(optimistic: optimistic ? .removed : nil) {
            () async throws(NetworkError) -> Outcome in
            func send(_ endpoint: Endpoint) async throws(NetworkError) -> Outcome {
                let response = try await session.send(endpoint, as: Remote.DeleteResponse.self)
                return try Remote.value(fromDelete: response).map { .value($0) } ?? .removed
            }
            return try await mutations.send(.delete, base: { self.mutationBase() }, endpoint, session, send)
        }
        // Kept for later (the outbox), the deletion shows everywhere: there is no value after it.
        return outcome.value
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
    @usableFromInline typealias Outcome = ResourceOutcome<Value>

    /// What the server had of the item when a change starts: the settled value (a failure's kept value
    /// included, never an optimistic value) and its version, with what the store knows of the item's validators
    /// (``KnownVersions``: those of this value or of an earlier version of it), or else the value's own.
    func mutationBase() -> MutationBase? {
        guard let snapshot = storage.withLock({ $0.machine.persistedSnapshot() }) else { return nil }
        // After the resource's lock: the store's versions are behind the registry's.
        let validators = link?.knownValidators() ?? snapshot.validators
        return MutationBase(validators: validators, version: Remote.version(of: snapshot.value), value: snapshot.value)
    }

    /// Runs a create, update or delete after every mutation asked before it.
    fileprivate func mutate(
        optimistic: ItemFact<Value>? = nil,
        creates: Bool = false,
        _ send: @escaping @Sendable () async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> Outcome {
        let result = await perform { machine, call, waiter, ranks in
            machine.askMutation(call, waiter, optimistic: optimistic, creates: creates, ranks: &ranks) { _ in
                do throws(NetworkError) {
                    return .success(try await send())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    @inlinable static func value(of outcome: Outcome) throws(NetworkError) -> Value {
        guard let value = outcome.value else {
            throw .invalidRequest("\(Remote.self): the operation returned no value")
        }
        return value
    }
}

extension ReadPolicy {
    /// The freshness window a policy checks (itself optional: the type's), or `nil` for one that does not.
    @inlinable var freshnessWindow: Duration?? {
        switch kind {
        case .always, .skipIfLoaded: nil
        case .skipIfFresh, .staleWhileRevalidate: .some(maxAge)
        }
    }

    @inlinable var revalidates: Bool { kind == .staleWhileRevalidate }
}
