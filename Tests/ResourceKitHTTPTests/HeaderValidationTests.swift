import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Header names must be RFC 9110 tokens and values free of CR, LF and NUL, wherever they come from; a bad one
/// fails with `.invalidRequest` naming the header before anything is sent.
@Suite struct HeaderValidationTests {
    static let badNames = ["X-A\r\nX-Injected", "X A", "X-A:", "", "X-\u{0}", "Ä-Header", "X-A\n"]
    static let badValues = ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{0}b"]

    @Test(arguments: badNames)
    func badNameFromAnEndpointIsRefused(name: String) async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/x", status: 204)
        let session = makeSession(stub)
        await #expect(
            throws: NetworkError.invalidRequest("header name \(name.debugDescription) is not an RFC 9110 token")
        ) {
            try await session.send(Endpoint(.get, "x", headers: [name: "1"]))
        }
        #expect(stub.requestCount == 0)
    }

    @Test(arguments: badValues)
    func badValueFromAnEndpointOrTheSessionIsRefused(value: String) async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/x", status: 204)
        let refused = NetworkError.invalidRequest("the value of header 'X-Token' contains CR, LF or NUL")
        await #expect(throws: refused) {
            try await makeSession(stub).send(Endpoint(.get, "x", headers: ["X-Token": value]))
        }
        let withDefaults = NetworkSession(
            baseURL: "http://test.local/api", transport: stub, defaultHeaders: ["X-Token": value])
        await #expect(throws: refused) { try await withDefaults.send(Endpoint(.get, "x")) }
        #expect(stub.requestCount == 0)
    }

    @Test func badHeadersFromAdaptersAreRefused() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/x", status: 204)
        let injecting = RequestAdapter { request async throws(NetworkError) -> URLRequest in
            var request = request
            request.setValue("1", forHTTPHeaderField: "X-A\r\nX-Injected")
            return request
        }
        let session = NetworkSession(baseURL: "http://test.local/api", transport: stub, adapters: [injecting])
        await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "x")) }
        // A token with a stray newline fails instead of going out unauthenticated.
        let bearer = NetworkSession(
            baseURL: "http://test.local/api", transport: stub, adapters: [BearerTokenAdapter(token: "t\n")])
        await #expect(throws: NetworkError.invalidRequest("the value of header 'Authorization' contains CR, LF or NUL"))
        {
            try await bearer.send(Endpoint(.get, "x"))
        }
        #expect(stub.requestCount == 0)
    }

    @Test func everyTokenCharacterIsAccepted() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/x", status: 204)
        let name = "X-Custom_1!#$%&'*+.^`|~"
        try await makeSession(stub).send(Endpoint(.get, "x", headers: [name: "value with spaces\tand tabs"]))
        #expect(stub.requests.first?.value(forHTTPHeaderField: name) == "value with spaces\tand tabs")
    }
}
