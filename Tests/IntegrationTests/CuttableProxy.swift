import Foundation
import ResourceKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP proxy on 127.0.0.1 to another loopback port, which a test can cut (every open connection is closed,
/// and new ones are closed as soon as they arrive) and restore: a network that drops and comes back.
/// Bounded: it stops after `maximumConnections` or when closed.
final class CuttableProxy: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let state = Locked<(isCut: Bool, open: [Int32], accepted: Int)>((false, [], 0))

    init(to upstream: UInt16, maximumConnections: Int = 256) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let state = state
        Thread.detachNewThread {
            for _ in 0..<maximumConnections {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                let isCut = state.withLock { state in
                    state.accepted += 1
                    return state.isCut
                }
                guard !isCut, let server = dial(upstream) else {
                    _ = shutdown(client, Int32(SHUT_RDWR))
                    closeFile(client)
                    continue
                }
                state.withLock { $0.open += [client, server] }
                Thread.detachNewThread { Self.pump(from: client, to: server, state) }
                Thread.detachNewThread { Self.pump(from: server, to: client, state) }
            }
        }
    }

    /// How many connections arrived, cut or not.
    var acceptedCount: Int { state.withLock { $0.accepted } }

    /// Closes every open connection and refuses new ones until ``restore()``.
    func cut() {
        let open = state.withLock { state in
            state.isCut = true
            defer { state.open = [] }
            return state.open
        }
        for descriptor in open { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    /// Lets connections through again.
    func restore() { state.withLock { $0.isCut = false } }

    /// Stops accepting and closes every connection.
    func stop() {
        cut()
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeFile(descriptor)
    }

    /// Copies bytes one way until either side closes; then shuts both down. (The descriptors stay open, a few
    /// per test: closing one while the other direction's thread still reads it could hand its number to
    /// another socket.)
    private static func pump(
        from source: Int32, to destination: Int32, _ state: Locked<(isCut: Bool, open: [Int32], accepted: Int)>
    ) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes {
                    send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
        }
        _ = shutdown(source, Int32(SHUT_RDWR))
        _ = shutdown(destination, Int32(SHUT_RDWR))
        state.withLock { state in state.open.removeAll { $0 == source || $0 == destination } }
    }
}

/// A connection to `port` on 127.0.0.1, or `nil`.
private func dial(_ port: UInt16) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        closeFile(fd)
        return nil
    }
    return fd
}

private func closeFile(_ descriptor: Int32) { _ = close(descriptor) }
