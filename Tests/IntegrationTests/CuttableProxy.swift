import Foundation
import ResourceKit
import ResourceKitTesting

/// A TCP proxy on 127.0.0.1 to another loopback port, which a test can cut (every open connection is closed,
/// and new ones are closed as soon as they arrive) and restore: a network that drops and comes back.
/// Bounded: it stops after `maximumConnections` or when closed.
final class CuttableProxy: Sendable {
    struct State {
        var isCut = false
        var open: [Int32] = []
        var accepted = 0
        /// How many bytes from the server each connection may pass to its client before it holds; `nil` for
        /// no limit.
        var downstreamLimit: Int?
        /// Whether a connection reached the limit and holds.
        var isHolding = false
    }

    let port: UInt16
    private let descriptor: Int32
    private let state = Locked(State())
    /// Wakes a connection that holds, on ``release()`` or ``cut()``.
    private let wake = DispatchSemaphore(value: 0)
    /// Opens when a connection first holds (``hold(after:)``).
    let held = AsyncLatch()

    init(to upstream: UInt16, maximumConnections: Int = 256) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let state = state
        let wake = wake
        let held = held
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
                Thread.detachNewThread { Self.pump(from: client, to: server, state, wake: nil, held: nil) }
                Thread.detachNewThread { Self.pump(from: server, to: client, state, wake: wake, held: held) }
            }
        }
    }

    /// How many connections arrived, cut or not.
    var acceptedCount: Int { state.withLock { $0.accepted } }

    /// Whether a connection has passed ``hold(after:)``'s bytes and holds the rest back.
    var isHolding: Bool { state.withLock { $0.isHolding } }

    /// Lets each connection pass at most `bytes` from the server to its client (its head included), then hold
    /// the rest back until ``release()`` or ``cut()``: a transfer stopped at a byte the test chose.
    func hold(after bytes: Int) { state.withLock { $0.downstreamLimit = bytes } }

    /// Lifts the limit: a connection that holds goes on.
    func release() {
        let wasHolding = state.withLock { state in
            state.downstreamLimit = nil
            defer { state.isHolding = false }
            return state.isHolding
        }
        if wasHolding { wake.signal() }
    }

    /// Closes every open connection and refuses new ones until ``restore()``.
    func cut() {
        let (open, wasHolding) = state.withLock { state in
            state.isCut = true
            defer {
                state.open = []
                state.isHolding = false
            }
            return (state.open, state.isHolding)
        }
        for descriptor in open { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
        if wasHolding { wake.signal() }
    }

    /// Lets connections through again.
    func restore() { state.withLock { $0.isCut = false } }

    /// Stops accepting and closes every connection.
    func stop() {
        cut()
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeFile(descriptor)
    }

    /// Copies bytes one way until either side closes; then shuts both down. From the server (`wake` given), it
    /// passes at most the downstream limit, then waits (at most a minute) to be released or cut. (The
    /// descriptors stay open, a few per test: closing one while the other direction's thread still reads it
    /// could hand its number to another socket.)
    private static func pump(
        from source: Int32, to destination: Int32, _ state: Locked<State>, wake: DispatchSemaphore?, held: AsyncLatch?
    ) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var passed = 0
        while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            var allowed = count
            if wake != nil, let limit = state.withLock({ $0.downstreamLimit }) {
                allowed = max(0, min(count, limit - passed))
            }
            guard forward(buffer, from: 0, to: allowed, destination) else { break }
            passed += allowed
            if allowed < count {
                state.withLock { $0.isHolding = true }
                held?.open()
                _ = wake?.wait(timeout: .now() + 60)
                guard !state.withLock({ $0.isCut }) else { break }
                guard forward(buffer, from: allowed, to: count, destination) else { break }
                passed += count - allowed
            }
        }
        _ = shutdown(source, Int32(SHUT_RDWR))
        _ = shutdown(destination, Int32(SHUT_RDWR))
        state.withLock { state in state.open.removeAll { $0 == source || $0 == destination } }
    }

    /// Sends `buffer[start..<end]` whole; `false` when the destination is gone.
    private static func forward(_ buffer: [UInt8], from start: Int, to end: Int, _ destination: Int32) -> Bool {
        var sent = start
        while sent < end {
            let written = buffer[sent..<end].withUnsafeBytes {
                Platform.send(destination, $0.baseAddress, $0.count)
            }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }
}

/// A connection to `port` on 127.0.0.1, or `nil`.
private func dial(_ port: UInt16) -> Int32? {
    let fd = socket(AF_INET, Platform.streamSocket, 0)
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
