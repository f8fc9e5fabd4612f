import Foundation
import ResourceKit
import ResourceKitTesting

/// A TCP server on 127.0.0.1 that answers every request with one small JSON body and closes the connection
/// (`Connection: close`), as HTTP/1.0 servers and many proxies do. It stops accepting when closed.
///
/// The first `closingFirst` connections get no answer at all: the server reads the request and closes the
/// connection cleanly (a FIN, not a reset) before sending a byte, as a server that restarts or drops idle
/// clients does.
final class ClosingServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let accepted = Locked(0)

    /// How many connections it has accepted.
    var connectionCount: Int { accepted.withLock { $0 } }

    init(body: String, closingFirst: Int = 0) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let accepted = accepted
        // Headers and body in two writes, the body's end marked only by the close: an HTTP/1.0 answer.
        let head = Array("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n".utf8)
        let tail = Array(body.utf8)
        Thread.detachNewThread {
            var served: UInt32 = 0
            // lint-waits: the server's own thread, accepting until its socket closes.
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                let number = accepted.withLock { count in
                    count += 1
                    return count
                }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &buffer, buffer.count)
                if number <= closingFirst {
                    closeWithoutAnswering(client)
                    continue
                }
                // A client that cancelled may have closed its end: no SIGPIPE for that.
                _ = head.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                // A server that takes its time over the body (0 to 1 ms), so responses end at every moment.
                served &+= 1
                usleep(UInt32(served % 20) * 50)
                _ = tail.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                _ = closeSocket(client)
            }
        }
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = closeSocket(descriptor)
    }
}

/// Ends the connection with a FIN before any response byte: shuts the sending side, drains what the client
/// still sends (a body in a later segment) until it closes its side, so no reset is sent, then closes.
private func closeWithoutAnswering(_ client: Int32) {
    _ = shutdown(client, Int32(SHUT_WR))
    // A client that keeps its side open cannot hold the server's thread for more than a few seconds.
    var limit = timeval(tv_sec: 5, tv_usec: 0)
    _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    var buffer = [UInt8](repeating: 0, count: 4096)
    for _ in 0..<1024 {
        guard read(client, &buffer, buffer.count) > 0 else { break }
    }
    _ = closeSocket(client)
}

/// `close(2)`, by a name the server's own `close()` does not hide.
private func closeSocket(_ descriptor: Int32) -> Int32 { close(descriptor) }
