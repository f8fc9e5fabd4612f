#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// Applies a credential to requests and renews it when the server rejects it.
///
/// Give one to ``NetworkSession/init(baseURL:validation:transport:defaultHeaders:encoder:decoder:adapters:authenticator:credentialScope:redirects:retry:timeLimit:clock:redaction:logger:activityDebounce:)``.
/// For every request to an origin in the session's ``CredentialScope``, the session asks for the current
/// ``credential()`` and lets ``apply(_:to:)`` add it. When the answer is an authentication failure
/// (``isAuthenticationFailure(_:)``, a `401` by default):
/// - if a newer credential exists already (another request refreshed it), the request is sent again with
///   it, without a refresh;
/// - otherwise ``refresh(after:)`` runs **once** for every request that failed with the same credential;
///   the others wait for it, then each is sent again, once, with the new credential;
/// - when the refresh fails, every waiting request fails with the same
///   ``NetworkError/authenticationFailed(_:)``.
///
/// A request sent again that fails once more is not refreshed a second time: its failure goes to the
/// validation provider like any other response.
public protocol Authenticator: Sendable {
    /// What proves who the caller is, such as a token.
    associatedtype Credential: Sendable & Equatable

    /// The credential to send now, or `nil` to send the request without one.
    func credential() async throws(NetworkError) -> Credential?

    /// Adds the credential to a request, for example as an `Authorization` header.
    /// - Parameters:
    ///   - credential: The credential.
    ///   - request: The request to change.
    func apply(_ credential: Credential, to request: inout URLRequest) throws(NetworkError)

    /// Whether the response says the credential was rejected; by default, whether its status is `401`.
    /// - Parameter response: The response.
    func isAuthenticationFailure(_ response: HTTPResponse) -> Bool

    /// Returns a new credential to replace `failed`, which the server rejected. It runs once for all
    /// requests that failed with `failed`; ``credential()`` should return the new one from now on.
    /// - Parameter failed: The rejected credential.
    /// - Returns: The new credential.
    /// - Throws: ``NetworkError``; every waiting request then fails with
    ///   ``NetworkError/authenticationFailed(_:)`` holding it.
    func refresh(after failed: Credential) async throws(NetworkError) -> Credential
}

extension Authenticator {
    /// Whether the status is `401`.
    public func isAuthenticationFailure(_ response: HTTPResponse) -> Bool { response.statusCode == 401 }
}

/// An ``Authenticator`` for bearer tokens, backed by closures.
///
/// ```swift
/// let authenticator = BearerAuthenticator(
///     token: { await tokens.current },
///     refresh: { try await tokens.renew($0) })
/// ```
///
/// The closures may throw any error; it is mapped with ``NetworkError/init(_:)``.
public struct BearerAuthenticator: Authenticator {
    private let token: @Sendable () async throws -> String?
    private let renew: @Sendable (String) async throws -> String

    /// Creates the authenticator.
    /// - Parameters:
    ///   - token: Returns the current token, or `nil` to send no `Authorization` header. What it throws,
    ///     mapped with ``NetworkError/init(_:)``, fails the request.
    ///   - refresh: Returns a new token to replace the rejected one. What it throws, mapped with
    ///     ``NetworkError/init(_:)``, fails every waiting request as ``NetworkError/authenticationFailed(_:)``.
    public init(
        token: @escaping @Sendable () async throws -> String?,
        refresh: @escaping @Sendable (String) async throws -> String
    ) {
        self.token = token
        self.renew = refresh
    }

    /// The current token.
    /// - Throws: What the `token` closure threw, mapped with ``NetworkError/init(_:)``.
    public func credential() async throws(NetworkError) -> String? {
        do {
            return try await token()
        } catch {
            throw NetworkError(error)
        }
    }

    /// Sets `Authorization: Bearer <token>`, replacing any `Authorization` the request had.
    public func apply(_ credential: String, to request: inout URLRequest) throws(NetworkError) {
        try HeaderValidation.check(name: "Authorization", value: credential)
        request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
    }

    /// Calls the refresh closure.
    /// - Throws: What the closure threw, mapped with ``NetworkError/init(_:)``.
    public func refresh(after failed: String) async throws(NetworkError) -> String {
        do {
            return try await renew(failed)
        } catch {
            throw NetworkError(error)
        }
    }
}

/// The session's side of an ``Authenticator``, with its type erased.
protocol AuthenticationHandling: Sendable {
    /// Applies the current credential; returns it, or `nil` when none was applied.
    func authenticate(_ request: inout URLRequest) async throws(NetworkError) -> (any Sendable)?
    func isFailure(_ response: HTTPResponse) -> Bool
    /// Makes sure a credential newer than `used` exists: refreshes once for all callers that used it.
    func recover(from used: any Sendable) async throws(NetworkError)
    /// How many callers wait on a refresh now; Observation hears when it changes (for the package's tests).
    var waiting: Int { get }
}

/// Runs at most one refresh per rejected credential, shared by every request that was rejected with it.
final class AuthenticationFlight<Wrapped: Authenticator>: AuthenticationHandling {
    typealias Credential = Wrapped.Credential

    private struct State {
        var refreshing: (from: Credential, task: Task<Result<Credential, NetworkError>, Never>)?
        var lastRefresh: (from: Credential, to: Credential)?
        var waiting = 0
    }

    private let authenticator: Wrapped
    private let state = Locked(State())

    init(_ authenticator: Wrapped) { self.authenticator = authenticator }

    func authenticate(_ request: inout URLRequest) async throws(NetworkError) -> (any Sendable)? {
        guard var credential = try await authenticator.credential() else { return nil }
        // The authenticator may not have stored a refreshed credential yet: use the refresh's answer.
        if let last = state.withLock({ $0.lastRefresh }), last.from == credential { credential = last.to }
        try authenticator.apply(credential, to: &request)
        return credential
    }

    func isFailure(_ response: HTTPResponse) -> Bool { authenticator.isAuthenticationFailure(response) }

    /// Published through Observation, for the package's tests.
    private let observation = ObservationPoint()

    var waiting: Int {
        observation.track()
        return state.withLock { $0.waiting }
    }

    func recover(from used: any Sendable) async throws(NetworkError) {
        guard let used = used as? Credential else { return }
        if let task = inFlight(from: used) { return try await wait(for: task) }
        if let last = state.withLock({ $0.lastRefresh }), last.from == used { return }
        // Someone may have replaced the credential some other way (a new sign-in): then use that one.
        if let current = try await authenticator.credential(), current != used { return }
        let task = state.withLock { state -> Task<Result<Credential, NetworkError>, Never> in
            if let refreshing = state.refreshing, refreshing.from == used { return refreshing.task }
            if let last = state.lastRefresh, last.from == used {
                return Task { .success(last.to) }
            }
            let authenticator = self.authenticator
            let task = Task { () -> Result<Credential, NetworkError> in
                do throws(NetworkError) {
                    return .success(try await authenticator.refresh(after: used))
                } catch {
                    return .failure(error)
                }
            }
            state.refreshing = (used, task)
            return task
        }
        try await wait(for: task)
    }

    private func inFlight(from used: Credential) -> Task<Result<Credential, NetworkError>, Never>? {
        state.withLock { state in
            guard let refreshing = state.refreshing, refreshing.from == used else { return nil }
            return refreshing.task
        }
    }

    private func wait(for task: Task<Result<Credential, NetworkError>, Never>) async throws(NetworkError) {
        // The refresh runs in a task of its own: one waiter's cancellation does not cancel it for the others.
        state.withLock { $0.waiting += 1 }
        observation.changed()
        let result = await task.value
        state.withLock { state in
            state.waiting -= 1
            if let refreshing = state.refreshing, refreshing.task == task {
                state.refreshing = nil
                if case .success(let new) = result { state.lastRefresh = (refreshing.from, new) }
            }
        }
        observation.changed()
        if case .failure(let error) = result { throw .authenticationFailed(error.underlyingAuthenticationError) }
        if Task.isCancelled { throw .cancelled }
    }
}

extension NetworkError {
    /// The error itself, or the one it wraps when it is already an authentication failure.
    var underlyingAuthenticationError: NetworkError {
        if case .authenticationFailed(let inner) = kind { return inner }
        return self
    }
}
