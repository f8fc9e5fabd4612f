import Foundation
import ResourceKit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that closes the first connection before answering, as one that restarts or drops idle clients
/// does, and answers the next: the same error on every platform, retried only where it is safe.
@Suite(.timeLimit(.minutes(1))) struct ClosedConnectionTests {
    static let answer = #"{"id":1}"#
    static let closed = NetworkError.transport(
        code: .networkConnectionLost, message: "the server closed the connection before answering")

    /// `RetryPolicy.standard` without its random wait, so the retry follows at once.
    static let standard: RetryPolicy = {
        var policy = RetryPolicy.standard
        policy.jitter = .full(using: { 0 })
        return policy
    }()

    func session(_ server: ClosingServer, logger: any NetworkLogging = SilentLogger()) -> NetworkSession {
        NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            retry: Self.standard, logger: logger)
    }

    @Test func aConnectionClosedBeforeAnyResponseByteIsALostConnection() async throws {
        let server = try ClosingServer(body: Self.answer, closingFirst: 1)
        defer { server.close() }
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/posts/1")))
        await #expect(throws: Self.closed) { try await URLSessionTransport(timeout: .seconds(45)).send(request) }
        #expect(server.connectionCount == 1)
    }

    @Test func aGetWhoseConnectionClosedBeforeAnsweringSucceedsAfterOneRetry() async throws {
        let server = try ClosingServer(body: Self.answer, closingFirst: 1)
        defer { server.close() }
        let logger = EventCollector()
        let data = try await session(server, logger: logger).data(for: Endpoint(.get, "posts/1"))
        #expect(data == Data(Self.answer.utf8))
        #expect(server.connectionCount == 2)
        #expect(logger.requests == 2)
        #expect(logger.statuses == [200])
    }

    @Test func aPostWhoseConnectionClosedBeforeAnsweringFailsClearlyAndIsNotSentAgain() async throws {
        let server = try ClosingServer(body: Self.answer, closingFirst: 1)
        defer { server.close() }
        let logger = EventCollector()
        await #expect(throws: Self.closed) {
            try await session(server, logger: logger).send(Endpoint(.post, "posts", body: .json(["title": "t"])))
        }
        #expect(server.connectionCount == 1)
        #expect(logger.requests == 1)
    }
}
