import Foundation
import ResourceKit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `URLSessionTransport` does on each kind of session: one it makes itself (on Linux its callbacks run on
/// `URLSession`'s own queue) and one it is given (they run on that session's delegate queue).
@Suite(.timeLimit(.minutes(1))) struct TransportSessionTests {
    static func transports() -> [(String, URLSessionTransport)] {
        let given = URLSessionConfiguration.ephemeral
        given.urlCache = nil
        return [
            ("init(timeout:)", URLSessionTransport(timeout: .seconds(45))),
            ("init(configuration:)", URLSessionTransport(configuration: .ephemeral)),
            ("init(session:)", URLSessionTransport(session: URLSession(configuration: given))),
        ]
    }

    /// Answering an authentication challenge cancels the task, which waits for `URLSession`'s queue: the
    /// transport answers from another thread, so on its own session the answer neither traps nor hangs, and the
    /// caller gets the `401` with its headers.
    @Test func aChallengeComesBackAsItsResponseOnEverySession() async throws {
        let server = try RecordingServer { _ in
            .init(status: 401, headers: ["WWW-Authenticate": #"Basic realm="api""#], body: "")
        }
        defer { server.close() }
        for (name, transport) in Self.transports() {
            let session = NetworkSession(baseURL: "http://127.0.0.1:\(server.port)", transport: transport)
            for _ in 0..<3 {
                let error = try #require(
                    await #expect(throws: NetworkError.self, "\(name)") {
                        try await session.send(Endpoint(.get, "secret"))
                    })
                #expect(error.statusCode == 401, "\(name)")
                #expect(error.headers?["WWW-Authenticate"] == #"Basic realm="api""#, "\(name)")
            }
        }
        #expect(server.requests.count == 9)
    }

    /// Requests started while others complete and are cancelled, on every kind of session: each caller gets
    /// its answer or `.cancelled`, and every request ends.
    @Test func manyRequestsCancelledAsTheyCompleteAllEnd() async throws {
        let server = try RecordingServer(maximumConnections: 10_000) { _ in .ok }
        defer { server.close() }
        for (name, transport) in Self.transports() {
            let session = NetworkSession(baseURL: "http://127.0.0.1:\(server.port)", transport: transport)
            var outcomes = (values: 0, cancelled: 0)
            for round in 0..<40 {
                let tasks = (0..<8).map { _ in Task { try await session.send(Endpoint(.get, "row")) } }
                // Cancel half of them once the first has answered: the rest are in flight or completing.
                _ = try? await tasks[0].value
                for (index, task) in tasks.enumerated() where (index + round) % 2 == 1 { task.cancel() }
                for task in tasks {
                    do {
                        _ = try await task.value
                        outcomes.values += 1
                    } catch let error as NetworkError {
                        #expect(error == .cancelled, "\(name)")
                        outcomes.cancelled += 1
                    }
                }
            }
            #expect(outcomes.values + outcomes.cancelled == 320, "\(name)")
            #expect(outcomes.values >= 160, "\(name)")
        }
    }
}
