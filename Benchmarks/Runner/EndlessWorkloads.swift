import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitTesting
import ResourceKitTransfer

/// Servers that never stop writing, over loopback: the peak memory each case costs the client, how long the call
/// takes to end, how long the server waits to see the connection closed after it, and how much the server wrote
/// after the client had what it would use (the decision) — beside a bare `URLSession` delegate, run the same way,
/// in the same run.
///
/// `--check` fails the run when a round that stopped within ``budgetMebibytesAfterDecision`` of the decision grew
/// the peak resident memory by more than ``budgetMegabytes``, or when no round of a case stopped within it. A
/// round the server drained past the budget is counted, not failed: on Linux a task's
/// cancel waits for `URLSession`'s own queue, which a socket that never runs dry holds for as long as it stays
/// readable (swift-corelibs-foundation 6.3: `URLSessionTask.cancel()` is a `sync` onto it), and the bare baseline
/// drains as often; what such a round costs in memory is the platform's too (its receive buffers, churned for
/// as long as it drains), and is reported beside the baseline's.
struct EndlessWorkloads: Sendable {
    let rounds: Int
    /// The most a round that stopped promptly may add to the process's peak resident memory.
    static let budgetMegabytes = 16.0
    /// What "stopped promptly" means for one round: the most the server writes after the decision.
    static let budgetMebibytesAfterDecision = 16.0
    /// The bound of a case that bounds a body read whole.
    static let bodyBound = 4 << 20
    /// The case that measures the platform alone, not the library.
    static let baselinePrefix = "baseline:"

    /// One case: what the client does against an endless server, throwing when the call did not end as it must.
    struct Case: Sendable {
        var name: String
        var head: String
        var prefix: Data = Data()
        /// When the server opens its threshold gate (for a client that waits for the server to have sent that much).
        var threshold: Int = .max
        /// Whether the transport bounds a body read whole to 4 MiB (its default is 64 MiB). Such a call returns once
        /// its task has ended, after the cancel: its decision is the bound, not its return.
        var boundsBody = false
        var run: @Sendable (NetworkSession, EndlessBenchmarkServer) async throws -> Void
    }

    static let cases: [Case] = [
        Case(name: "baseline: bare URLSession delegate, 500", head: "HTTP/1.1 500 Internal Server Error") { _, server in
            try await BareEndlessClient.firstMebibyte(port: server.port)
        },
        Case(name: "500, endless body: bytes", head: "HTTP/1.1 500 Internal Server Error") { session, _ in
            do {
                _ = try await session.bytes(Endpoint(.get, "endless"))
                throw BenchmarkError("bytes returned on a 500")
            } catch let error as NetworkError where error.statusCode == 500 {
                guard error.body?.count == 1 << 20 else {
                    throw BenchmarkError("500 with \(error.body?.count ?? 0) bytes")
                }
            }
        },
        Case(name: "503, endless body: download", head: "HTTP/1.1 503 Service Unavailable") { session, _ in
            let destination = FileManager.default.temporaryDirectory.appendingPathComponent("endless-\(UUID())")
            defer { try? FileManager.default.removeItem(at: destination) }
            do {
                _ = try await session.download(Endpoint(.get, "endless"), to: destination)
                throw BenchmarkError("download returned on a 503")
            } catch let error as NetworkError where error.statusCode == 503 {
                guard error.body?.count == 1 << 20 else {
                    throw BenchmarkError("503 with \(error.body?.count ?? 0) bytes")
                }
            }
        },
        Case(
            name: "endless event line, 64 KiB bound", head: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream",
            prefix: Data("data: small\n\ndata: ".utf8)
        ) { session, _ in
            var events = 0
            do {
                for try await _ in session.events(Endpoint(.get, "events"), maximumEventSize: 64 << 10) { events += 1 }
                throw BenchmarkError("the event stream ended without an error")
            } catch let error as NetworkError where error.code == .invalidResponse && events == 1 {}
        },
        Case(
            name: "200, endless body: send, 4 MiB bound", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json",
            boundsBody: true
        ) { session, _ in
            do {
                _ = try await session.data(for: Endpoint(.get, "endless"))
                throw BenchmarkError("send returned an endless body")
            } catch let error as NetworkError where error.code == .invalidResponse {}
        },
        Case(
            name: "200, 256 MiB nobody reads, dropped",
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream", threshold: 256 << 20
        ) { session, server in
            let response = try await session.bytes(Endpoint(.get, "unread"))
            try await server.passedThreshold.wait()
            withExtendedLifetime(response) {}
        },
    ]

    func run(check: Bool) async throws -> Report {
        var report = Report()
        var over: [String] = []
        for item in Self.cases {
            var peaks: [Double] = []
            var ends: [Double] = []
            var closes: [Double] = []
            var afterDecision: [Double] = []
            for _ in 0..<rounds {
                let server = try EndlessBenchmarkServer(head: item.head, prefix: item.prefix, threshold: item.threshold)
                var transport = URLSessionTransport(timeout: .seconds(30))
                if item.boundsBody { transport.maximumResponseBodySize = Self.bodyBound }
                let session = NetworkSession(
                    baseURL: "http://127.0.0.1:\(server.port)", transport: transport, timeLimit: nil)
                PeakMemory.reset()
                let before = PeakMemory.residentMegabytes
                let start = ContinuousClock.now
                try await item.run(session, server)
                let ended = ContinuousClock.now
                // What the server had written when the client had what it would use: every byte after this is
                // one the client let the server send after deciding to stop.
                let atDecision = item.boundsBody ? Int64(Self.bodyBound) : server.written
                // A server that gave up (8 GiB written) was drained to its end: counted below with what it wrote.
                let outcome = try await server.outcome()
                peaks.append(PeakMemory.peakMegabytes - before)
                afterDecision.append(Double(outcome.written - atDecision) / 1_048_576)
                ends.append(Self.seconds(ended - start) * 1000)
                closes.append(Swift.max(0, Self.seconds(outcome.at - ended)) * 1000)
            }
            report.add(Measurement(workload: item.name, variant: "peak RSS growth", unit: "MB", samples: peaks))
            report.add(Measurement(workload: item.name, variant: "call ends", unit: "ms", samples: ends))
            report.add(Measurement(workload: item.name, variant: "closed after the end", unit: "ms", samples: closes))
            report.add(
                Measurement(
                    workload: item.name, variant: "written after the decision", unit: "MiB", samples: afterDecision))
            let prompt = zip(peaks, afterDecision).filter { $0.1 <= Self.budgetMebibytesAfterDecision }.map(\.0)
            let drained = rounds - prompt.count
            report.notes.append(
                "\(item.name): \(drained) of \(rounds) rounds drained past \(Int(Self.budgetMebibytesAfterDecision)) MiB"
                    + " after the decision; peak RSS growth of the others at most"
                    + " \(String(format: "%.2f", prompt.max() ?? 0)) MB")
            guard !item.name.hasPrefix(Self.baselinePrefix) else { continue }
            if let worst = prompt.max(), worst > Self.budgetMegabytes {
                over.append("\(item.name): \(worst) MB in a round that stopped promptly")
            }
            // A client that never stops the transfer drains every round.
            if prompt.isEmpty { over.append("\(item.name): no round stopped within the budget after the decision") }
        }
        report.notes.append(
            "endless bodies: a round that stops within \(Int(Self.budgetMebibytesAfterDecision)) MiB of the decision"
                + " grows the peak RSS by at most \(Int(Self.budgetMegabytes)) MB; the call ends at the decision")
        if check, !over.isEmpty {
            report.printTable()
            throw BenchmarkError("over budget: \(over.joined(separator: "; "))")
        }
        return report
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// A server on 127.0.0.1 that answers one request with a chunked body that never ends, as fast as the socket takes
/// it, until the client closes the connection (or 8 GiB, or 30 s blocked on a client that neither reads nor
/// closes). Runs on a thread of its own.
final class EndlessBenchmarkServer: Sendable {
    struct Outcome: Sendable {
        /// Body bytes, counted in 64 bits: the server gives up at 8 GiB, past a 32-bit `Int`.
        var written: Int64
        var closedByClient: Bool
        var at: ContinuousClock.Instant
    }

    /// The most it writes before it gives up: 8 GiB.
    static let giveUpBytes: Int64 = 8 << 30

    let port: UInt16
    let passedThreshold = AsyncLatch()
    private let ended = AsyncLatch()
    private let result = Locked<Outcome?>(nil)
    private let progress = Locked<Int64>(0)
    private let descriptor: Int32

    /// The body bytes written so far.
    var written: Int64 { progress.withLock { $0 } }

    init(head: String, prefix: Data, threshold: Int) throws {
        let (fd, port) = try listenOnLoopback()
        self.port = port
        descriptor = fd
        let (ended, passedThreshold, result, progress) = (ended, passedThreshold, result, progress)
        Thread.detachNewThread {
            let outcome = Self.answer(
                fd, head: head, prefix: prefix, threshold: threshold, passedThreshold, progress: progress)
            result.withLock { $0 = outcome }
            ended.open()
        }
    }

    deinit {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeSocket(descriptor)
    }

    /// How the connection ended, once it has.
    func outcome() async throws -> Outcome {
        try await ended.wait()
        guard let outcome = result.withLock({ $0 }) else { throw BenchmarkError("no outcome") }
        return outcome
    }

    private static func answer(
        _ fd: Int32, head: String, prefix: Data, threshold: Int, _ gate: AsyncLatch, progress: Locked<Int64>
    ) -> Outcome {
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return Outcome(written: 0, closedByClient: false, at: .now) }
        defer { closeSocket(client) }
        var scratch = [UInt8](repeating: 0, count: 8192)
        _ = recv(client, &scratch, scratch.count, 0)
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        func chunk(_ data: Data) -> Data {
            Data((String(data.count, radix: 16) + "\r\n").utf8) + data + Data("\r\n".utf8)
        }
        let block = chunk(Data(repeating: UInt8(ascii: "x"), count: 64 << 10))
        var written = Int64(prefix.count)
        // An empty chunk would end the body.
        let first = prefix.isEmpty ? Data() : chunk(prefix)
        var failure = write(Data((head + "\r\nTransfer-Encoding: chunked\r\n\r\n").utf8) + first, to: client)
        while failure == nil, written < Self.giveUpBytes {
            failure = write(block, to: client)
            if failure == nil { written += 64 << 10 }
            progress.withLock { $0 = written }
            if written >= Int64(threshold) { gate.open() }
        }
        return Outcome(written: written, closedByClient: failure == EPIPE || failure == ECONNRESET, at: .now)
    }

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
