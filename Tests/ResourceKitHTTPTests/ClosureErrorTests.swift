import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An error that is not a `NetworkError`, as an app's own code throws.
private struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// What a `Boom` becomes: `NetworkError(_:)` maps an error it does not know to `.transport` with `.unknown`.
private let boom = NetworkError.transport(code: .unknown, message: "boom")

/// App code with untyped throws, as closures written without annotations call it.
private func renew(_ token: String) async throws -> String { throw Boom() }
private func currentToken() async throws -> String? { throw Boom() }
private func cancelled() async throws -> String { throw CancellationError() }
private func offline(_ request: URLRequest) async throws -> URLRequest { throw URLError(.notConnectedToInternet) }
private func region() async throws -> URL { throw Boom() }
private func check(_ response: HTTPResponse) throws { throw Boom() }
private func fixture(_ request: URLRequest) async throws -> HTTPResponse { throw Boom() }

/// Every closure the API takes accepts the natural form `{ try await f($0) }`, with no annotation, and what
/// it throws reaches the caller mapped with `NetworkError(_:)`.
@Suite(.timeLimit(.minutes(1))) struct ClosureErrorTests {
    let endpoint = Endpoint(.get, "posts/1")

    func session(
        _ transport: any HTTPTransport = StubTransport(),
        baseURL: any BaseURLProviding = "http://test.local/api",
        validation: any ValidationProviding = StatusCodeValidation(),
        adapters: [any RequestAdapting] = [],
        authenticator: (any Authenticator)? = nil
    ) -> NetworkSession {
        NetworkSession(
            baseURL: baseURL, validation: validation, transport: transport, adapters: adapters,
            authenticator: authenticator, timeLimit: nil)
    }

    /// Answers 401 to every request.
    func rejecting() -> StubTransport {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", status: 401)
        return stub
    }

    @Test func aRefreshThatThrowsAnAppErrorFailsTheRequestAsAnAuthenticationFailure() async throws {
        let authenticator = BearerAuthenticator(token: { "old" }, refresh: { try await renew($0) })
        let transport = rejecting()
        await #expect(throws: NetworkError.authenticationFailed(boom)) {
            try await session(transport, authenticator: authenticator).send(endpoint)
        }
        #expect(transport.requestCount == 1)
    }

    @Test func aRefreshThatThrowsCancellationErrorFailsAsCancelledInsideTheAuthenticationFailure() async throws {
        let authenticator = BearerAuthenticator(token: { "old" }, refresh: { _ in try await cancelled() })
        await #expect(throws: NetworkError.authenticationFailed(.cancelled)) {
            try await session(rejecting(), authenticator: authenticator).send(endpoint)
        }
    }

    @Test func aTokenClosureThatThrowsFailsTheRequestBeforeItIsSent() async throws {
        let transport = StubTransport()
        let authenticator = BearerAuthenticator(token: { try await currentToken() }, refresh: { $0 })
        await #expect(throws: boom) { try await session(transport, authenticator: authenticator).send(endpoint) }
        let adapter = BearerTokenAdapter(token: { try await currentToken() })
        await #expect(throws: boom) { try await session(transport, adapters: [adapter]).send(endpoint) }
        #expect(transport.requestCount == 0)
    }

    @Test func aRequestAdapterThatThrowsAURLErrorFailsWithItsCode() async throws {
        let transport = StubTransport()
        let adapter = RequestAdapter { try await offline($0) }
        let message = URLError(.notConnectedToInternet).localizedDescription
        await #expect(throws: NetworkError.transport(code: .notConnectedToInternet, message: message)) {
            try await session(transport, adapters: [adapter]).send(endpoint)
        }
        #expect(transport.requestCount == 0)
    }

    @Test func aDynamicBaseURLThatThrowsFailsTheRequest() async throws {
        await #expect(throws: boom) { try await session(baseURL: DynamicBaseURL { try await region() }).send(endpoint) }
    }

    @Test func aValidationClosureThatThrowsAnAppErrorFailsTheRequest() async throws {
        let transport = StubTransport()
        transport.stub(.get, "/api/posts/1", json: "{}")
        let validation = ValidationClosure { try check($0) }
        await #expect(throws: boom) { try await session(transport, validation: validation).send(endpoint) }
    }

    @Test func aResponderThatThrowsAnAppErrorFailsTheRequest() async throws {
        let transport = StubTransport()
        transport.stub(.get, "/api/posts/1") { try await fixture($0) }
        await #expect(throws: boom) { try await session(transport).send(endpoint) }
        transport.stub(.get, "/api/posts/1") { _ in throw URLError(.cancelled) }
        await #expect(throws: NetworkError.cancelled) { try await session(transport).send(endpoint) }
    }

    @Test func closuresWithTheTypedAnnotationStillCompileAndThrowTheirError() async throws {
        let authenticator = BearerAuthenticator(
            token: { "old" },
            refresh: { (_: String) async throws(NetworkError) -> String in throw .invalidRequest("typed") })
        await #expect(throws: NetworkError.authenticationFailed(.invalidRequest("typed"))) {
            try await session(rejecting(), authenticator: authenticator).send(endpoint)
        }
    }

    @Test func networkErrorMapsEveryKindOfError() {
        #expect(NetworkError(NetworkError.invalidResponse("cycle")) == .invalidResponse("cycle"))
        #expect(NetworkError(CancellationError()) == .cancelled)
        #expect(NetworkError(URLError(.cancelled)) == .cancelled)
        #expect(NetworkError(URLError(.timedOut)) == .timeout)
        let lost = URLError(.networkConnectionLost)
        #expect(NetworkError(lost) == .transport(code: .networkConnectionLost, message: lost.localizedDescription))
        #expect(NetworkError(Boom()) == boom)
    }
}
