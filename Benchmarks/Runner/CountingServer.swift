import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An HTTP/1.1 server on 127.0.0.1 in front of an ``InMemoryBackend``, with keep-alive, that counts what its
/// clients cost: requests, and the bytes of every response (head and body). A connection gets a thread of its
/// own; each request is answered by the backend, then given the cache headers of a REST server behind an `ETag`
/// middleware: every `200` or `304` to a `GET` says `Cache-Control: max-age=…`, and a list page (which the
/// backend answers without validators) gets an `ETag` of its body and a `304` for an `If-None-Match` that names
/// it, as records already do.
final class CountingServer: Sendable {
    struct Counts: Sendable, Equatable {
        var requests = 0
        var bytes = 0
        /// Requests answered `304 Not Modified`.
        var notModified = 0
    }

    let port: UInt16
    let backend: InMemoryBackend
    private let maxAge: Duration
    private let descriptor: Int32
    private let counts = Locked(Counts())
    private let stopped = Locked(false)

    init(backend: InMemoryBackend, maxAge: Duration) throws {
        self.backend = backend
        self.maxAge = maxAge
        (descriptor, port) = try listenOnLoopback()
        let descriptor = descriptor
        // The loop holds the server until ``stop()`` shuts the listening socket, which ends it.
        Thread.detachNewThread { [self] in
            // lint-waits: an accept loop, not a wait: it ends when the listening socket is shut down.
            while true {
                let client = accept(descriptor, nil, nil)
                guard client >= 0, !stopped.withLock({ $0 }) else {
                    if client >= 0 { closeSocket(client) }
                    return
                }
                Platform.prepareSocket(client)
                Thread.detachNewThread { self.serve(client) }
            }
        }
    }

    /// What the clients cost so far.
    var taken: Counts { counts.withLock { $0 } }

    /// Stops accepting connections; open ones end with their client. Call it once done: the accept loop holds the
    /// server until then.
    func stop() {
        guard
            !stopped.withLock({ stopping in
                defer { stopping = true }; return stopping
            })
        else { return }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeSocket(descriptor)
    }

    /// Answers the requests of one connection until the client closes it.
    private func serve(_ client: Int32) {
        defer { closeSocket(client) }
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            // One request: its head, then its body's `Content-Length` bytes.
            var headEnd = pending.range(of: Data("\r\n\r\n".utf8))
            while headEnd == nil {
                let count = recv(client, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                pending.append(buffer, count: count)
                headEnd = pending.range(of: Data("\r\n\r\n".utf8))
            }
            guard let headEnd else { return }
            let head = String(decoding: pending[pending.startIndex..<headEnd.lowerBound], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count >= 2, let url = URL(string: "http://127.0.0.1:\(port)\(requestLine[1])") else {
                return
            }
            var request = URLRequest(url: url)
            request.httpMethod = String(requestLine[0])
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                request.setValue(value, forHTTPHeaderField: String(line[..<colon]))
            }
            let length = request.value(forHTTPHeaderField: "Content-Length").flatMap(Int.init) ?? 0
            pending.removeSubrange(pending.startIndex..<headEnd.upperBound)
            while pending.count < length {
                let count = recv(client, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                pending.append(buffer, count: count)
            }
            if length > 0 { request.httpBody = Data(pending.prefix(length)) }
            pending.removeFirst(length)
            let response = answer(request)
            guard write(response, to: client) else { return }
        }
    }

    /// The backend's answer, with the cache headers of the server it stands for.
    private func answer(_ request: URLRequest) -> HTTPResponse {
        let backend = self.backend
        let result = Locked<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let response: HTTPResponse
            do throws(NetworkError) {
                response = try await backend.send(request)
            } catch {
                response = HTTPResponse(
                    statusCode: error.statusCode ?? 500, headers: error.headers ?? HTTPHeaders(),
                    body: error.body ?? Data(), url: request.url)
            }
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        var response = result.withLock { $0 } ?? HTTPResponse(statusCode: 500, url: request.url)
        guard request.httpMethod == "GET", response.statusCode == 200 || response.statusCode == 304 else {
            return response
        }
        if response.statusCode == 200, response.headers["ETag"] == nil {
            // A list page: tagged by its body, as an ETag middleware would.
            var hasher = Hasher()
            hasher.combine(response.body)
            let tag = "\"\(String(UInt(bitPattern: hasher.finalize()), radix: 16))\""
            response.headers["ETag"] = tag
            if let asked = request.value(forHTTPHeaderField: "If-None-Match"), asked == tag {
                response = HTTPResponse(statusCode: 304, headers: ["ETag": tag], body: Data(), url: request.url)
            }
        }
        response.headers["Cache-Control"] = "max-age=\(maxAge.components.seconds)"
        return response
    }

    /// Writes a response and counts it; `false` when the client went.
    private func write(_ response: HTTPResponse, to client: Int32) -> Bool {
        let reason = HTTPURLResponse.localizedString(forStatusCode: response.statusCode)
        var head = "HTTP/1.1 \(response.statusCode) \(reason)\r\n"
        for field in response.headers where field.name.lowercased() != "content-length" {
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "Content-Length: \(response.body.count)\r\nConnection: keep-alive\r\n\r\n"
        let bytes = Data(head.utf8) + response.body
        counts.withLock { counts in
            counts.requests += 1
            counts.bytes += bytes.count
            if response.statusCode == 304 { counts.notModified += 1 }
        }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[(bytes.startIndex + offset)...].withUnsafeBytes {
                Platform.send(client, $0.baseAddress, $0.count)
            }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}
