import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitTesting
import ResourceKitTransfer
import Testing

/// A server on 127.0.0.1 that answers each request with a head announcing more than it sends, then closes the
/// connection. Runs on a thread of its own, for at most `connections` requests.
final class TruncatingServer: Sendable {
    let port: UInt16
    private let descriptor: Int32

    /// - Parameters:
    ///   - chunked: Whether the body is chunked and ends without its last chunk, instead of sending 4,000 of the
    ///     10,000 bytes its `Content-Length` announces.
    ///   - contentType: The body's type.
    ///   - body: What a chunked body sends before the connection closes.
    init(
        chunked: Bool, contentType: String = "application/octet-stream",
        body chunk: String = String(repeating: "a", count: 4_000), connections: Int = 8
    ) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        Thread.detachNewThread {
            for _ in 0..<connections {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                // The whole request head first: a close with request bytes unread would reset the connection.
                var head: [UInt8] = []
                var scratch = [UInt8](repeating: 0, count: 8192)
                while !head.suffix(4).elementsEqual("\r\n\r\n".utf8) {
                    let count = recv(client, &scratch, scratch.count, 0)
                    guard count > 0 else { break }
                    head += scratch[..<count]
                }
                let answer =
                    chunked
                    ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: \(contentType)\r\n\r\n"
                        + String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n"
                    : "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\nContent-Type: \(contentType)\r\n\r\n"
                        + String(repeating: "a", count: 4_000)
                let bytes = Array(answer.utf8)
                _ = bytes.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                _ = close(client)
            }
        }
    }

    deinit {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = close(descriptor)
    }
}

/// A body that ends before the length its head announced fails with `invalidResponse`, whichever call reads it.
@Suite(.timeLimit(.minutes(1))) struct TruncatedBodyTests {
    static func session(_ server: TruncatingServer) -> NetworkSession {
        NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
    }

    @Test(arguments: [false, true]) func sendNamesABodyCutShort(chunked: Bool) async throws {
        let server = try TruncatingServer(chunked: chunked)
        let error = await #expect(throws: NetworkError.self) {
            _ = try await Self.session(server).data(for: Endpoint(.get, "short"))
        }
        #expect(error?.code == .invalidResponse)
    }

    @Test(arguments: [false, true]) func bytesEndsABodyCutShortWithInvalidResponse(chunked: Bool) async throws {
        let server = try TruncatingServer(chunked: chunked)
        let response = try await Self.session(server).bytes(Endpoint(.get, "short"))
        var received = 0
        let error = await #expect(throws: NetworkError.self) {
            for try await chunk in response.body { received += chunk.count }
        }
        #expect(error?.code == .invalidResponse)
        #expect(received == 4_000)
    }

    @Test(arguments: [false, true]) func aDownloadCutShortFailsAndLeavesNoFile(chunked: Bool) async throws {
        let server = try TruncatingServer(chunked: chunked)
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("short-\(UUID())")
        let error = await #expect(throws: NetworkError.self) {
            _ = try await Self.session(server).download(Endpoint(.get, "short"), to: destination)
        }
        #expect(error?.code == .invalidResponse)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    /// An event stream whose connection is cut midway (a chunked body without its last chunk) reconnects, as
    /// after any lost connection: a cut body is not a broken response there.
    @Test func anEventStreamCutMidwayReconnects() async throws {
        let server = try TruncatingServer(chunked: true, contentType: "text/event-stream", body: "id: 7\ndata: a\n\n")
        var iterator = Self.session(server).events(
            Endpoint(.get, "events"), reconnect: ReconnectPolicy(initialDelay: .zero, jitter: .none)
        ).makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "a", lastEventID: "7"))
        #expect(try await iterator.next() == ServerSentEvent(data: "a", lastEventID: "7"))
    }
}
