import Foundation
import ResourceKit

/// An HTTP/1.1 server on 127.0.0.1 that answers each request with what `respond` returns and records the
/// requests it received, headers as they arrived on the socket. One request per connection
/// (`Connection: close`); it stops when closed or after `maximumConnections`.
final class RecordingServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: HTTPHeaders
        /// The body, by its `Content-Length` or decoded from `Transfer-Encoding: chunked`.
        var body = Data()
    }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders = [:]
        var body = ""

        static let ok = Answer(status: 200, headers: ["Content-Type": "application/json"], body: "{}")
        static func redirect(_ status: Int = 302, to location: String, headers: HTTPHeaders = [:]) -> Answer {
            Answer(status: status, headers: headers.merging(["Location": location]))
        }
    }

    let port: UInt16
    private let descriptor: Int32
    private let log = Locked<[Request]>([])

    /// The requests received so far, in order.
    var requests: [Request] { log.withLock { $0 } }

    init(maximumConnections: Int = 32, respond: @escaping @Sendable (Request) -> Answer) throws {
        (descriptor, port) = try listenOnLoopback()
        let fd = descriptor
        let log = log
        Thread.detachNewThread {
            for _ in 0..<maximumConnections {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                var limit = timeval(tv_sec: 10, tv_usec: 0)
                _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                if let request = readRequest(client) {
                    log.withLock { $0.append(request) }
                    let bytes = Array(Self.serialize(respond(request)).utf8)
                    _ = bytes.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                }
                _ = closeSocket(client)
            }
        }
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = closeSocket(descriptor)
    }

    private static func serialize(_ answer: Answer) -> String {
        var head = "HTTP/1.1 \(answer.status) Status\r\n"
        for field in answer.headers { head += "\(field.name): \(field.value)\r\n" }
        head += "Content-Length: \(answer.body.utf8.count)\r\nConnection: close\r\n\r\n"
        return head + answer.body
    }
}

/// Reads one request: the head up to its blank line and its body, by its `Content-Length` or its chunks (at
/// most 256 MB, read in bounded loops).
private func readRequest(_ client: Int32) -> RecordingServer.Request? {
    var reader = SocketReader(client: client)
    guard let head = reader.line(upTo: Array("\r\n\r\n".utf8)) else { return nil }
    let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
    let start = lines[0].split(separator: " ")
    guard start.count >= 2 else { return nil }
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var body = Data()
    if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
        for _ in 0..<1_000_000 {
            guard let sizeLine = reader.line(upTo: Array("\r\n".utf8)),
                let size = Int(String(decoding: sizeLine, as: UTF8.self).split(separator: ";")[0], radix: 16),
                size >= 0, body.count + size <= 256 << 20
            else { return nil }
            if size == 0 {
                _ = reader.line(upTo: Array("\r\n".utf8))
                break
            }
            guard let chunk = reader.bytes(size), reader.bytes(2) != nil else { return nil }
            body.append(contentsOf: chunk)
        }
    } else if let length = headers["Content-Length"].flatMap({ Int($0) }), length > 0, length <= 256 << 20 {
        guard let bytes = reader.bytes(length) else { return nil }
        body = Data(bytes)
    }
    return RecordingServer.Request(method: String(start[0]), path: String(start[1]), headers: headers, body: body)
}

/// Reads a socket through a buffer, in bounded loops.
private struct SocketReader {
    let client: Int32
    var received: [UInt8] = []
    var position = 0

    /// More bytes; `false` at the end or on an error.
    private mutating func fill() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(client, &buffer, buffer.count)
        guard count > 0 else { return false }
        if position > 0 {
            received.removeFirst(position)
            position = 0
        }
        received += buffer[0..<count]
        return true
    }

    /// The bytes up to `terminator`, which is consumed; `nil` when it never comes within 64 KB.
    mutating func line(upTo terminator: [UInt8]) -> [UInt8]? {
        var searched = position
        for _ in 0..<64 {
            let end = received.count - terminator.count
            if end >= searched {
                for index in searched...end where received[index..<(index + terminator.count)].elementsEqual(terminator)
                {
                    let line = Array(received[position..<index])
                    position = index + terminator.count
                    return line
                }
                searched = end + 1
            }
            let offset = position
            guard fill() else { return nil }
            searched -= offset
        }
        return nil
    }

    /// Exactly `count` bytes; `nil` when the connection ends first.
    mutating func bytes(_ count: Int) -> [UInt8]? {
        while received.count - position < count {
            guard fill() else { return nil }
        }
        let bytes = Array(received[position..<(position + count)])
        position += count
        return bytes
    }
}

/// `close(2)`, by a name the server's own `close()` does not hide.
private func closeSocket(_ descriptor: Int32) -> Int32 { close(descriptor) }
