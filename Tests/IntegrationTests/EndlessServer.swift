import Foundation
import ResourceKitTesting

/// A server on 127.0.0.1 that answers one request with `head`, then `prefix`, then `filler` bytes for ever, 64 KiB
/// at a time: what a hostile or broken server sends. It stops when the client closes the connection, or, so that a
/// test that goes wrong still ends, after 60 s, or 30 s blocked on a client that neither reads nor closes.
///
/// It writes at most some 128 MB a second (a pause of 0.5 ms after each write), so that the transfer cannot take
/// both cores of a small machine from the reader it waits for; the unpaced case, on a quiet process, is the
/// benchmark's (`Benchmarks --only endless`). Everything runs on a thread of its own, never on a Swift
/// concurrency thread.
final class EndlessServer: Sendable {
    /// How the connection ended, as the server saw it.
    struct Outcome: Sendable {
        /// Body bytes written before the client closed (or the server gave up).
        var written: Int
        /// Whether the client closed the connection; `false` when the server gave up.
        var closedByClient: Bool
        /// When the server saw the end.
        var at: ContinuousClock.Instant
    }

    let port: UInt16
    /// Opens when the connection ended: ``outcome`` is set.
    let ended = AsyncLatch()
    /// Opens once `threshold` body bytes have been written.
    let passedThreshold = AsyncLatch()
    private let descriptor: Int32
    private let result = LockedOutcome()

    /// - Parameters:
    ///   - head: The status line and headers, without the blank line that ends them.
    ///   - chunked: Whether the body goes in chunks of `Transfer-Encoding: chunked` (the head must say so).
    ///   - prefix: What the body starts with.
    ///   - filler: The byte the rest of the body repeats.
    ///   - threshold: When ``passedThreshold`` opens.
    init(
        head: String, chunked: Bool = true, prefix: Data = Data(), filler: UInt8 = UInt8(ascii: "x"),
        threshold: Int = .max
    ) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let ended = ended
        let passedThreshold = passedThreshold
        let result = result
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else {
                result.set(Outcome(written: 0, closedByClient: false, at: .now))
                ended.open()
                return
            }
            var scratch = [UInt8](repeating: 0, count: 8192)
            _ = recv(client, &scratch, scratch.count, 0)
            var limit = timeval(tv_sec: 30, tv_usec: 0)
            _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let block = Data(repeating: filler, count: 64 << 10)
            func frame(_ data: Data) -> Data {
                chunked ? Data((String(data.count, radix: 16) + "\r\n").utf8) + data + Data("\r\n".utf8) : data
            }
            var written = 0
            var closedByClient = false
            var ok = Self.write(Data((head + "\r\n\r\n").utf8), to: client) == nil
            if ok, !prefix.isEmpty {
                ok = Self.write(frame(prefix), to: client) == nil
                written += prefix.count
            }
            let framed = frame(block)
            let giveUp = ContinuousClock.now + .seconds(60)
            // lint-waits: the server's own thread, pacing its writes; nothing waits for a condition.
            while ok, ContinuousClock.now < giveUp {
                if let error = Self.write(framed, to: client) {
                    closedByClient = error == EPIPE || error == ECONNRESET
                    ok = false
                    break
                }
                written += block.count
                if written >= threshold { passedThreshold.open() }
                usleep(500)
            }
            result.set(Outcome(written: written, closedByClient: closedByClient, at: .now))
            _ = close(client)
            ended.open()
        }
    }

    deinit {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = close(descriptor)
    }

    /// How the connection ended; `nil` until ``ended`` opens.
    var outcome: Outcome? { result.get() }

    /// Writes all of `data`; the `errno` that stopped it, if any.
    private static func write(_ data: Data, to client: Int32) -> Int32? {
        var offset = 0
        while offset < data.count {
            let count = data[(data.startIndex + offset)...].withUnsafeBytes {
                Platform.send(client, $0.baseAddress, $0.count)
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count < 0 ? errno : EPIPE }
            offset += count
        }
        return nil
    }
}

private final class LockedOutcome: @unchecked Sendable {
    // Safe to share: every access holds the lock.
    private let lock = NSLock()
    private var outcome: EndlessServer.Outcome?

    func set(_ value: EndlessServer.Outcome) { lock.withLock { outcome = value } }
    func get() -> EndlessServer.Outcome? { lock.withLock { outcome } }
}
