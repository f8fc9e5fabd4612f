import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Servers that never stop writing, over real sockets: once a call has what it will use, the request is
/// cancelled and the connection closed by the client. The server gives up by itself after 60 s, so a client
/// that goes on reading fails the test instead of hanging it. How much memory each case
/// takes, and how fast the connection closes, is measured in release by `Benchmarks --only endless --check`,
/// which `Scripts/test` runs: every round within 16 MB.
extension LargeBodyTests {
    /// Run on its own (`Scripts/test` does, with `RESOURCEKIT_ENDLESS_TESTS=1`): on Linux every `URLSession` of a
    /// process runs on one serial queue (swift-corelibs-foundation's shared queue), and a socket that never runs
    /// dry holds it while a busy machine's client falls behind the server, so the other requests of the process
    /// wait, some past their timeouts.
    @Suite(
        .timeLimit(.minutes(2)),
        .enabled(
            if: ProcessInfo.processInfo.environment["RESOURCEKIT_ENDLESS_TESTS"] == "1",
            "run on its own by Scripts/test: RESOURCEKIT_ENDLESS_TESTS=1 swift test --filter EndlessBodyTests"))
    struct EndlessBodyTests {
        static func session(_ server: EndlessServer) -> NetworkSession {
            NetworkSession(
                baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(30)))
        }

        /// The server's end, which it reaches by itself even if the client never closes.
        static func closedByClient(_ server: EndlessServer) async throws -> EndlessServer.Outcome {
            try await server.ended.wait()
            let outcome = try #require(server.outcome)
            #expect(
                outcome.closedByClient, "the server gave up after \(outcome.written) bytes: the client kept reading")
            return outcome
        }

        @Test func aRejectedStatusReadsTheFirstMebibyteForTheErrorAndClosesTheConnection() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain")
            let error = await #expect(throws: NetworkError.self) {
                _ = try await Self.session(server).bytes(Endpoint(.get, "endless"))
            }
            #expect(error?.statusCode == 500)
            #expect(error?.body?.count == 1 << 20)
            _ = try await Self.closedByClient(server)
        }

        /// A status that is not a success but that validation accepts arrives with its body's first mebibyte
        /// in memory, read before `bytes` returns; the rest is not read.
        @Test func anAcceptedErrorStatusArrivesWithItsFirstMebibyteAndClosesTheConnection() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain")
            let session = NetworkSession(
                baseURL: "http://127.0.0.1:\(server.port)", validation: StatusCodeValidation(acceptable: 200..<600),
                transport: URLSessionTransport(timeout: .seconds(30)))
            let response = try await session.bytes(Endpoint(.get, "endless"))
            #expect(response.statusCode == 500)
            // Closed before the body is read here: the session read what it keeps, and stopped.
            _ = try await Self.closedByClient(server)
            #expect(try await response.body.collect(upTo: .max) == Data(repeating: UInt8(ascii: "x"), count: 1 << 20))
        }

        @Test func aDownloadAnsweredWithAnEndless503ThrowsAndClosesTheConnection() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("endless-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let destination = directory.appendingPathComponent("file")
            let error = await #expect(throws: NetworkError.self) {
                _ = try await Self.session(server).download(Endpoint(.get, "endless"), to: destination)
            }
            #expect(error?.statusCode == 503)
            #expect(error?.body?.count == 1 << 20)
            _ = try await Self.closedByClient(server)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }

        /// A status the validation provider lets through is still not the file: the error carries the body's
        /// first mebibyte, and the rest is not read.
        @Test func aDownloadOfAnAcceptedErrorStatusCarriesTheFirstMebibyte() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain")
            let session = NetworkSession(
                baseURL: "http://127.0.0.1:\(server.port)", validation: StatusCodeValidation(acceptable: 200..<600),
                transport: URLSessionTransport(timeout: .seconds(30)))
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("endless-\(UUID())")
            let error = await #expect(throws: NetworkError.self) {
                _ = try await session.download(Endpoint(.get, "endless"), to: destination)
            }
            #expect(error?.statusCode == 503)
            #expect(error?.body == Data(repeating: UInt8(ascii: "x"), count: 1 << 20))
            _ = try await Self.closedByClient(server)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }

        @Test func anEndlessEventLineDeliversTheEventBeforeItThenFailsAndCloses() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream",
                prefix: Data("data: small\n\ndata: ".utf8))
            var events: [ServerSentEvent] = []
            let error = await #expect(throws: NetworkError.self) {
                for try await event in Self.session(server).events(
                    Endpoint(.get, "events"), maximumEventSize: 64 << 10)
                {
                    events.append(event)
                }
            }
            #expect(events == [ServerSentEvent(data: "small")])
            #expect(error?.code == .invalidResponse)
            _ = try await Self.closedByClient(server)
        }

        @Test func aLineOverTheLimitOfLinesClosesTheConnection() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain",
                prefix: Data("first\n".utf8))
            let response = try await Self.session(server).bytes(Endpoint(.get, "lines"))
            var lines: [String] = []
            let error = await #expect(throws: NetworkError.self) {
                for try await line in response.body.lines(maximumLength: 64 << 10) { lines.append(line) }
            }
            #expect(lines == ["first"])
            #expect(error?.code == .invalidResponse)
            _ = try await Self.closedByClient(server)
        }

        /// `send` holds a body in memory: past the transport's bound it fails, and the request is cancelled as the
        /// body passes it.
        @Test func aBodyLongerThanTheTransportsBoundFailsSendAndClosesTheConnection() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json")
            var transport = URLSessionTransport(timeout: .seconds(30))
            transport.maximumResponseBodySize = 4 << 20
            let session = NetworkSession(baseURL: "http://127.0.0.1:\(server.port)", transport: transport)
            let error = await #expect(throws: NetworkError.self) {
                _ = try await session.data(for: Endpoint(.get, "endless"))
            }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("maximumResponseBodySize") == true)
            _ = try await Self.closedByClient(server)
        }

        /// A body of exactly the bound is read; one byte more is not, on the transport's own session and on one
        /// passed in (checked there once the body has arrived).
        @Test(arguments: [false, true]) func aBodyOfExactlyTheBoundIsRead(givenSession: Bool) async throws {
            let limit = 256 << 10
            let server = try RecordingServer { request in
                .init(
                    status: 200, body: String(repeating: "a", count: request.path.hasSuffix("over") ? limit + 1 : limit)
                )
            }
            defer { server.close() }
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            var transport =
                givenSession
                ? URLSessionTransport(session: URLSession(configuration: configuration))
                : URLSessionTransport(timeout: .seconds(30))
            transport.maximumResponseBodySize = limit
            let session = NetworkSession(baseURL: "http://127.0.0.1:\(server.port)", transport: transport)
            #expect(try await session.data(for: Endpoint(.get, "exact")).count == limit)
            let error = await #expect(throws: NetworkError.self) {
                _ = try await session.data(for: Endpoint(.get, "over"))
            }
            #expect(error?.code == .invalidResponse)
        }

        /// A body held unread waits on disk past 1 MB: the transfer goes on. Dropped unread, it stops.
        @Test func aSuccessfulBodyNobodyReadsStopsWhenItIsDropped() async throws {
            let server = try EndlessServer(
                head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/octet-stream",
                threshold: 32 << 20)
            var response: StreamedResponse? = try await Self.session(server).bytes(Endpoint(.get, "unread"))
            #expect(response?.statusCode == 200)
            // Unread, the body still arrives (it waits on disk), as far as the server's threshold.
            try await server.passedThreshold.wait()
            #expect(server.outcome == nil)
            response = nil
            let outcome = try await Self.closedByClient(server)
            #expect(outcome.written >= 32 << 20)
        }
    }
}
