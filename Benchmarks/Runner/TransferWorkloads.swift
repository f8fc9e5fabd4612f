import Foundation
import ResourceKit
import ResourceKitTransfer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Large transfers over loopback from a server in this process: a download to disk against
/// `URLSessionTransport`'s own `downloadTask`, and a body read slowly through `bytes`, with the peak memory
/// each costs.
struct TransferWorkloads: Sendable {
    let megabytes: Int
    let rounds: Int

    func run() async throws -> Report {
        var report = Report()
        let count = megabytes << 20
        let server = try PatternServer(bytesPerConnection: count)
        defer { server.close() }
        let base = "http://127.0.0.1:\(server.port)"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("transfers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let session = NetworkSession(
            baseURL: base, transport: URLSessionTransport(timeout: .seconds(60)), timeLimit: nil)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let raw = URLSession(configuration: configuration)
        let name = "download \(megabytes) MB to disk"
        var ours: [Double] = []
        var theirs: [Double] = []
        var delegate: [Double] = []
        var flushed: [Double] = []
        var oursPeak: [Double] = []
        /// The same for URLSession's own data delegate doing the same work: what the platform's path costs.
        var rawPeak: [Double] = []
        let writer = DelegateWriter()
        let delegated = URLSession(configuration: configuration, delegate: writer, delegateQueue: nil)
        for round in 0..<rounds {
            let destination = directory.appendingPathComponent("ours-\(round)")
            PeakMemory.reset()
            let before = PeakMemory.residentMegabytes
            let seconds = try await secondsTaken {
                let file = try await session.download(Endpoint(.get, "file"), to: destination)
                guard file.byteCount == count else { throw BenchmarkError("downloaded \(file.byteCount) bytes") }
            }
            oursPeak.append(PeakMemory.peakMegabytes - before)
            ours.append(Double(megabytes) / seconds)
            try? FileManager.default.removeItem(at: destination)
            theirs.append(
                Double(megabytes) / (try await secondsTaken { try await Self.downloadTask(raw, "\(base)/file", count) })
            )
            let plain = directory.appendingPathComponent("delegate-\(round)")
            delegate.append(
                Double(megabytes)
                    / (try await secondsTaken {
                        try await writer.download(delegated, "\(base)/file", to: plain, count)
                    }))
            try? FileManager.default.removeItem(at: plain)
            PeakMemory.reset()
            let rawBefore = PeakMemory.residentMegabytes
            flushed.append(
                Double(megabytes)
                    / (try await secondsTaken {
                        try await writer.download(delegated, "\(base)/file", to: plain, count, flush: true)
                    }))
            rawPeak.append(PeakMemory.peakMegabytes - rawBefore)
            try? FileManager.default.removeItem(at: plain)
        }
        let oursMeasurement = Measurement(workload: name, variant: "session.download", unit: "MB/s", samples: ours)
        let theirsMeasurement = Measurement(
            workload: name, variant: "URLSession.downloadTask", unit: "MB/s", samples: theirs)
        let delegateMeasurement = Measurement(
            workload: name, variant: "URLSession data delegate", unit: "MB/s", samples: delegate)
        let flushedMeasurement = Measurement(
            workload: name, variant: "data delegate + fsync", unit: "MB/s", samples: flushed)
        report.add(theirsMeasurement)
        report.add(delegateMeasurement)
        report.add(flushedMeasurement)
        report.add(oursMeasurement)
        report.add(Measurement(workload: name, variant: "peak RSS growth", unit: "MB", samples: oursPeak))
        report.add(
            Measurement(workload: name, variant: "peak RSS, data delegate", unit: "MB", samples: rawPeak))
        report.compare(
            "download: raw data delegate / downloadTask", delegateMeasurement, over: theirsMeasurement,
            meaning: "URLSession's own data delegate writing each chunk to a file: the bound of a delegate path")
        report.compare(
            "download: session.download / data delegate + fsync", oursMeasurement, over: flushedMeasurement,
            meaning: "the same work as session.download (a file flushed before it takes its name), without ResourceKit")
        report.compare(
            "download: session.download / downloadTask", oursMeasurement, over: theirsMeasurement,
            meaning: "throughput of a \(megabytes) MB download to disk (target ≥ 0.95)")

        // A reader that takes 20 ms per 4 MB: some 200 MB/s, slower than loopback.
        var slowPeak: [Double] = []
        for _ in 0..<rounds {
            PeakMemory.reset()
            let before = PeakMemory.residentMegabytes
            let response = try await session.bytes(Endpoint(.get, "stream"))
            var read = 0
            var sinceNap = 0
            for try await chunk in response.body {
                read += chunk.count
                sinceNap += chunk.count
                if sinceNap >= 4 << 20 {
                    sinceNap = 0
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            guard read == count else { throw BenchmarkError("read \(read) bytes") }
            slowPeak.append(PeakMemory.peakMegabytes - before)
        }
        report.add(
            Measurement(
                workload: "bytes: \(megabytes) MB to a slow reader", variant: "peak RSS growth", unit: "MB",
                samples: slowPeak))
        report.notes.append(
            "transfers: peak RSS growth targets ≤ 32 MB for a \(megabytes) MB download and for a slow reader")
        return report
    }

    /// `URLSession`'s own download to a temporary file, moved away as an app would.
    private static func downloadTask(_ session: URLSession, _ url: String, _ count: Int) async throws {
        guard let url = URL(string: url) else { throw BenchmarkError("bad URL") }
        let size: Int = try await withCheckedThrowingContinuation { continuation in
            session.downloadTask(with: url) { location, _, error in
                if let error { return continuation.resume(throwing: error) }
                guard let location else { return continuation.resume(throwing: BenchmarkError("no file")) }
                let size = (try? FileManager.default.attributesOfItem(atPath: location.path)[.size] as? NSNumber)??
                    .intValue
                try? FileManager.default.removeItem(at: location)
                continuation.resume(returning: size ?? -1)
            }.resume()
        }
        guard size == count else { throw BenchmarkError("downloadTask wrote \(size) bytes") }
    }
}

/// A bare `URLSession` data delegate that writes each chunk to a file as it arrives, on the session's delegate
/// queue: the least work a download through `didReceive data` can do, without ResourceKit.
final class DelegateWriter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safe to share: one download at a time, and the delegate queue is serial.
    private var handle: FileHandle?
    private var flushes = false
    private var written = 0
    private var continuation: CheckedContinuation<Int, any Error>?

    /// Downloads `url` to `file`; with `flush`, `fsync`s the file before closing it, as `session.download` does.
    func download(_ session: URLSession, _ url: String, to file: URL, _ count: Int, flush: Bool = false) async throws {
        flushes = flush
        guard let url = URL(string: url) else { throw BenchmarkError("bad URL") }
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw BenchmarkError("cannot create \(file.path)")
        }
        handle = try FileHandle(forWritingTo: file)
        written = 0
        let total = try await withCheckedThrowingContinuation { continuation in
            self.continuation = continuation
            session.dataTask(with: url).resume()
        }
        guard total == count else { throw BenchmarkError("the data delegate wrote \(total) bytes") }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        try? handle?.write(contentsOf: data)
        written += data.count
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if flushes { try? handle?.synchronize() }
        try? handle?.close()
        handle = nil
        // Cleared before it is resumed: the resumed caller may start the next download, and set its own
        // continuation, before this thread goes on.
        let waiting = continuation
        continuation = nil
        if let error { waiting?.resume(throwing: error) } else { waiting?.resume(returning: written) }
    }
}

/// Resident memory, whose peak can be reset; NaN where the platform does not report it (Linux does:
/// `Platform.residentKilobytes(peak:)`).
enum PeakMemory {
    static func reset() { Platform.resetPeakResidentMemory() }

    static var residentMegabytes: Double { (Platform.residentKilobytes(peak: false) ?? .nan) / 1024 }
    static var peakMegabytes: Double { (Platform.residentKilobytes(peak: true) ?? .nan) / 1024 }
}

/// An HTTP/1.1 server on 127.0.0.1 that answers every request with `bytesPerConnection` bytes from a 1 MB
/// pattern, one request per connection, as fast as the socket takes them.
final class PatternServer: Sendable {
    let port: UInt16
    private let descriptor: Int32

    init(bytesPerConnection count: Int) throws {
        let (fd, port) = try listenOnLoopback()
        self.port = port
        self.descriptor = fd
        let pattern = [UInt8]((0..<(1 << 20)).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.answer(client, count: count, pattern: pattern) }
            }
        }
    }

    private static func answer(_ client: Int32, count: Int, pattern: [UInt8]) {
        var scratch = [UInt8](repeating: 0, count: 8192)
        _ = recv(client, &scratch, scratch.count, 0)
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\nConnection: close\r\n\r\n".utf8)
        var ok = head.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) } == head.count
        var left = count
        while ok, left > 0 {
            let size = min(left, pattern.count)
            var offset = 0
            while ok, offset < size {
                let written = pattern[offset..<size].withUnsafeBytes {
                    Platform.send(client, $0.baseAddress, $0.count)
                }
                ok = written > 0
                offset += max(written, 0)
            }
            left -= size
        }
        closeSocket(client)
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeSocket(descriptor)
    }
}
