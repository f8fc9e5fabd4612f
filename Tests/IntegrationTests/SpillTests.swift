import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// Answers one request with `count` bytes of `a` to `z` over and over, as fast as the socket takes them, and
/// opens `delivered` once the client has read them all and closed the connection.
private final class BulkServer: Sendable {
    let port: UInt16
    let delivered = AsyncLatch()
    private let descriptor: Int32

    init(count: Int) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let delivered = delivered
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            // Read the request head, whatever it is.
            var scratch = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &scratch, scratch.count, 0)
            var message = Array("HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\nConnection: close\r\n\r\n".utf8)
            message += (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            var offset = 0
            while offset < message.count {
                let written = message[offset...].withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                guard written > 0 else { break }
                offset += written
            }
            // The client closes once it has read the whole body.
            var limit = timeval(tv_sec: 20, tv_usec: 0)
            _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            while recv(client, &scratch, scratch.count, 0) > 0 {}
            delivered.open()
            _ = close(client)
        }
    }

    deinit {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = close(descriptor)
    }
}

/// Answers one request with a head announcing 10 bytes, sends the first 5, and the other 5 only once `release`
/// is signalled.
private final class GatedServer: Sendable {
    let port: UInt16
    let release = DispatchSemaphore(value: 0)
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let release = release
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var scratch = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &scratch, scratch.count, 0)
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nfirst".utf8)
            _ = head.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
            // Bounded: a test that never signals still ends.
            _ = release.wait(timeout: .now() + 30)
            let rest = Array("later".utf8)
            _ = rest.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
            _ = close(client)
        }
    }

    deinit {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = close(descriptor)
    }
}

/// The temporary files this process holds open and has unlinked: the spilled bodies.
private func spilledFiles() -> [String] {
    (Platform.unlinkedOpenFiles() ?? []).filter { $0.contains("resourcekit-body-") }
}

/// `bytes(_:)` on `URLSessionTransport` against servers of this process.
@Suite(.timeLimit(.minutes(1))) struct SocketStreamingTests {
    /// The first bytes are read while the server still holds the rest back.
    @Test func theFirstBytesArriveBeforeTheRestIsSent() async throws {
        let server = try GatedServer()
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
        let response = try await session.bytes(Endpoint(.get, "gated"))
        #expect(response.expectedLength == 10)
        var iterator = response.body.makeAsyncIterator()
        #expect(try await iterator.next() == Data("first".utf8))
        server.release.signal()
        #expect(try await iterator.next() == Data("later".utf8))
        #expect(try await iterator.next() == nil)
    }
}

/// Tests of large bodies that must not run beside each other: `SpillTests` counts the process's spill files,
/// which another large download makes too.
@Suite(.serialized) struct LargeBodyTests {}

extension LargeBodyTests {
    @Suite(.enabled(if: Platform.unlinkedOpenFiles() != nil), .timeLimit(.minutes(1)))
    struct SpillTests {
        /// URLSession on Linux reads a response whatever the reader does: past 1 MB unread, the body waits in an
        /// unlinked file, and comes back whole and in order.
        @Test func aBodyTheReaderDoesNotKeepUpWithSpillsToDiskAndComesBackInOrder() async throws {
            let count = 8 << 20
            let server = try BulkServer(count: count)
            let session = NetworkSession(
                baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
            let response = try await session.bytes(Endpoint(.get, "bulk"))
            // The reader waits until URLSession has read the whole body.
            try await server.delivered.wait()
            var received = Data()
            var sawSpill = false
            for try await chunk in response.body {
                if !sawSpill, !spilledFiles().isEmpty { sawSpill = true }
                received.append(chunk)
            }
            #expect(received.count == count)
            #expect(received == Data((0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }))
            #expect(sawSpill)
            // Gone with the body.
            #expect(spilledFiles().isEmpty)
        }
    }
}
