import Foundation
import ResourceKitHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server whose connection drops in the middle of a body, as CFNetwork tells it on Apple platforms: the head,
/// 40 bytes, then `networkConnectionLost` — no libcurl words. `/length` announces 100 bytes; `/chunked` announces
/// none; `/whole` sends its 40 announced bytes and then fails the same way (the body was whole).
final class CutBodyProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { request.url?.host == "cut.test" }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url else { return }
        var headers = ["Content-Type": "application/octet-stream"]
        switch url.lastPathComponent {
        case "length": headers["Content-Length"] = "100"
        case "whole": headers["Content-Length"] = "40"
        default: break
        }
        guard let head = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return }
        client?.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Data(repeating: 7, count: 40))
        client?.urlProtocol(self, didFailWithError: URLError(.networkConnectionLost))
    }

    override func stopLoading() {}
}

@Suite struct CutBodyTests {
    static var configuration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [CutBodyProtocol.self]
        return configuration
    }

    /// The transports to check: one that makes its session (the body gathered chunk by chunk on Linux), and one
    /// on a session of the caller's (a completion handler, which gets no response with an error).
    static let transports: [@Sendable () -> URLSessionTransport] = [
        { URLSessionTransport(configuration: configuration) },
        { URLSessionTransport(session: URLSession(configuration: configuration)) },
    ]

    static func session(_ transport: URLSessionTransport) -> NetworkSession {
        NetworkSession(baseURL: "http://cut.test", transport: transport, timeLimit: nil)
    }

    @Test(arguments: ["length", "chunked"], [0, 1])
    func aBodyCutShortIsAnInvalidResponseWhateverWordsThePlatformHas(path: String, transport: Int) async throws {
        let session = Self.session(Self.transports[transport]())
        let error = await #expect(throws: NetworkError.self) { _ = try await session.data(for: Endpoint(.get, path)) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.hasPrefix(URLSessionTransport.truncatedBodyMessage) == true)
    }

    @Test func aWholeBodyFollowedByAFailureIsNotCutShort() async throws {
        let session = Self.session(URLSessionTransport(configuration: Self.configuration))
        let error = await #expect(throws: NetworkError.self) {
            _ = try await session.data(for: Endpoint(.get, "whole"))
        }
        #expect(error?.code == .transport)
        #expect(error?.transportCode == .networkConnectionLost)
    }

    @Test(arguments: ["length", "chunked"])
    func aStreamedBodyCutShortEndsWithAnInvalidResponse(path: String) async throws {
        let session = Self.session(URLSessionTransport(configuration: Self.configuration))
        let response = try await session.bytes(Endpoint(.get, path))
        let error = await #expect(throws: NetworkError.self) { _ = try await response.body.collect(upTo: 1 << 20) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.hasPrefix(URLSessionTransport.truncatedBodyMessage) == true)
    }
}
