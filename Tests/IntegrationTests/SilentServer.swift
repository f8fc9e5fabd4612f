import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// A TCP listener on 127.0.0.1 that accepts connections and never answers.
final class SilentServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    let accepted = AsyncLatch()

    init() throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let accepted = accepted
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            if client >= 0 { accepted.open() }
        }
    }

    func close() { _ = shutdown(descriptor, Int32(SHUT_RDWR)); _ = closeDescriptor(descriptor) }
}

struct WaitError: Error, CustomStringConvertible { var description: String }

/// A TCP socket listening on 127.0.0.1 at a port the system picks.
func listenOnLoopback() throws -> (descriptor: Int32, port: UInt16) {
    let fd = socket(AF_INET, Platform.streamSocket, 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, listen(fd, 128) == 0 else { throw WaitError(description: "cannot listen") }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A port on 127.0.0.1 with nothing listening.
func closedPort() throws -> UInt16 {
    let server = try SilentServer()
    let port = server.port
    server.close()
    return port
}

/// `close(2)`, by a name the server's own `close()` does not hide.
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }
