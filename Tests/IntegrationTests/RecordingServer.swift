import Foundation
import ResourceKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server on 127.0.0.1 that answers each request with what `respond` returns and records the
/// requests it received, headers as they arrived on the socket. One request per connection
/// (`Connection: close`); it stops when closed or after `maximumConnections`.
final class RecordingServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: HTTPHeaders
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
                    _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, noSignal) }
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

/// Reads one request: the head up to its blank line and, by its `Content-Length`, the body (discarded).
private func readRequest(_ client: Int32) -> RecordingServer.Request? {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let blankLine = Array("\r\n\r\n".utf8)
    var headEnd: Int?
    for _ in 0..<256 {
        let count = read(client, &buffer, buffer.count)
        guard count > 0 else { return nil }
        received += buffer[0..<count]
        headEnd = received.indices.dropLast(3).first { Array(received[$0..<($0 + 4)]) == blankLine }
        if headEnd != nil { break }
    }
    guard let headEnd else { return nil }
    let lines = String(decoding: received[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
    let start = lines[0].split(separator: " ")
    guard start.count >= 2 else { return nil }
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var remaining = (headers["Content-Length"].flatMap { Int($0) } ?? 0) - (received.count - headEnd - 4)
    for _ in 0..<256 {
        guard remaining > 0 else { break }
        let count = read(client, &buffer, buffer.count)
        guard count > 0 else { break }
        remaining -= count
    }
    return RecordingServer.Request(method: String(start[0]), path: String(start[1]), headers: headers)
}

#if canImport(Glibc)
    private let noSignal = Int32(MSG_NOSIGNAL)
#else
    private let noSignal: Int32 = 0
#endif

private func closeSocket(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(descriptor)
    #else
        Darwin.close(descriptor)
    #endif
}
