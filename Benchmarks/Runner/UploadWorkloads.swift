import Foundation
import ResourceKit
import ResourceKitTransfer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A large file uploaded over loopback to a server in this process that reads and discards it: the
/// session's streamed file body against `URLSession`'s own `uploadTask(with:fromFile:)`, and the peak memory
/// the session's costs.
struct UploadWorkloads: Sendable {
    let megabytes: Int
    let rounds: Int

    func run() async throws -> Report {
        var report = Report()
        let count = megabytes << 20
        let server = try SinkServer()
        defer { server.close() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload.bin")
        try Self.write(count, to: file)
        let base = "http://127.0.0.1:\(server.port)"
        let session = NetworkSession(baseURL: base, transport: URLSessionTransport(timeout: .seconds(60)))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let raw = URLSession(configuration: configuration)
        let name = "upload a \(megabytes) MB file"
        var ours: [Double] = []
        var theirs: [Double] = []
        var peak: [Double] = []
        for _ in 0..<rounds {
            PeakMemory.reset()
            let before = PeakMemory.residentMegabytes
            let progress = TransferProgress()
            let seconds = try await secondsTaken {
                var endpoint = Endpoint(.post, "upload", body: .file(file))
                endpoint.uploadProgress = progress
                let answer = try await session.data(for: endpoint)
                guard String(decoding: answer, as: UTF8.self) == "\(count)" else {
                    throw BenchmarkError("the server read \(String(decoding: answer, as: UTF8.self)) bytes")
                }
            }
            peak.append(PeakMemory.peakMegabytes - before)
            ours.append(Double(megabytes) / seconds)
            theirs.append(
                Double(megabytes) / (try await secondsTaken { try await Self.uploadTask(raw, base, file, count) }))
        }
        let oursMeasurement = Measurement(workload: name, variant: "RequestBody.file", unit: "MB/s", samples: ours)
        let theirsMeasurement = Measurement(
            workload: name, variant: "URLSession.uploadTask(fromFile:)", unit: "MB/s", samples: theirs)
        report.add(theirsMeasurement)
        report.add(oursMeasurement)
        report.add(Measurement(workload: name, variant: "peak RSS growth", unit: "MB", samples: peak))
        report.compare(
            "upload: RequestBody.file / uploadTask(fromFile:)", oursMeasurement, over: theirsMeasurement,
            meaning: "throughput of a \(megabytes) MB file upload, chunked against a Content-Length")
        report.notes.append("uploads: peak RSS growth target ≤ 32 MB for a \(megabytes) MB file")
        return report
    }

    /// A file of `count` bytes, written 1 MB at a time.
    private static func write(_ count: Int, to url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchmarkError("cannot create \(url.path)")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for _ in 0..<(count >> 20) { try handle.write(contentsOf: block) }
    }

    private static func uploadTask(_ session: URLSession, _ base: String, _ file: URL, _ count: Int) async throws {
        guard let url = URL(string: base + "/upload") else { throw BenchmarkError("bad URL") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        let answer: String = try await withCheckedThrowingContinuation { continuation in
            session.uploadTask(with: request, fromFile: file) { data, _, error in
                if let error { return continuation.resume(throwing: error) }
                continuation.resume(returning: String(decoding: data ?? Data(), as: UTF8.self))
            }.resume()
        }
        guard answer == "\(count)" else { throw BenchmarkError("uploadTask: the server read \(answer) bytes") }
    }
}

/// An HTTP/1.1 server on 127.0.0.1 that reads each request's body (by `Content-Length` or chunks), discards
/// it, and answers with how many bytes it read; one request per connection.
final class SinkServer: Sendable {
    let port: UInt16
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.answer(client) }
            }
        }
    }

    private static func answer(_ client: Int32) {
        var reader = Reader(client: client)
        let count = reader.bodyLength() ?? -1
        let body = "\(count)"
        let reply = Array(
            "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
        _ = reply.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
        closeSocket(client)
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeSocket(descriptor)
    }

    /// Reads a request through a 256 KB buffer, keeping none of its body.
    private struct Reader {
        let client: Int32
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        var start = 0
        var end = 0

        mutating func fill() -> Bool {
            if start == end {
                start = 0
                end = 0
            } else if end == buffer.count {
                buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
                end -= start
                start = 0
            }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress! + end, $0.count - end, 0) }
            guard count > 0 else { return false }
            end += count
            return true
        }

        /// A line ending in CRLF, without it.
        mutating func line() -> String? {
            for _ in 0..<64 {
                if let index = buffer[start..<end].firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[start..<index], as: UTF8.self)
                    start = index + 1
                    return line.hasSuffix("\r") ? String(line.dropLast()) : line
                }
                guard fill() else { return nil }
            }
            return nil
        }

        mutating func skip(_ count: Int) -> Bool {
            var left = count
            while left > 0 {
                if start == end, !fill() { return false }
                let take = min(left, end - start)
                start += take
                left -= take
            }
            return true
        }

        /// How many body bytes the request carried.
        mutating func bodyLength() -> Int? {
            var length: Int?
            var chunked = false
            while let line = line(), !line.isEmpty {
                let lower = line.lowercased()
                if lower.hasPrefix("content-length:") {
                    length = Int(lower.dropFirst(15).trimmingCharacters(in: .whitespaces))
                }
                if lower.hasPrefix("transfer-encoding:"), lower.contains("chunked") { chunked = true }
            }
            if !chunked { return skip(length ?? 0) ? length ?? 0 : nil }
            var total = 0
            while let sizeLine = line() {
                guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else { return nil }
                if size == 0 { return line() != nil ? total : nil }
                guard skip(size), self.line() != nil else { return nil }
                total += size
            }
            return nil
        }
    }
}
