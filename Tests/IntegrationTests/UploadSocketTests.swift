import Foundation
import ResourceKit
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads through `URLSessionTransport` to a loopback server that records what reached its socket.
@Suite(.timeLimit(.minutes(1))) struct UploadSocketTests {
    static func file(_ count: Int, seed: Int = 0) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString).bin")
        var generator = UInt64(truncatingIfNeeded: seed) &+ 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[index] = UInt8(truncatingIfNeeded: generator >> 56)
        }
        try Data(bytes).write(to: url)
        return url
    }

    static func session(_ server: RecordingServer) -> NetworkSession {
        NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)))
    }

    @Test func aLargeFileReachesTheServerIntactWithProgressAlongTheWay() async throws {
        let server = try RecordingServer { request in
            RecordingServer.Answer(status: 201, headers: ["Content-Type": "text/plain"], body: "\(request.body.count)")
        }
        defer { server.close() }
        let url = try Self.file(8 << 20, seed: 1)
        let progress = TransferProgress(interval: .zero)
        let updates = progress.updates()
        var endpoint = Endpoint(.post, "uploads", body: .file(url, contentType: "video/mp4"))
        endpoint.uploadProgress = progress
        let answer = try await Self.session(server).data(for: endpoint)
        #expect(String(decoding: answer, as: UTF8.self) == "\(8 << 20)")
        let request = try #require(server.requests.first)
        #expect(request.body == (try Data(contentsOf: url)))
        #expect(request.headers["Content-Type"] == "video/mp4")
        // Linux's URLSession sends a stream without a length.
        #expect(request.headers["Transfer-Encoding"]?.lowercased() == "chunked")
        #expect(request.headers["Content-Length"] == nil)
        var seen: [TransferProgress.Status] = []
        for await status in updates { seen.append(status) }
        #expect(seen.last == .init(completedBytes: 8 << 20, expectedBytes: 8 << 20, isFinished: true))
        // Bytes were counted as URLSession read them, in many steps that never go back.
        let counts = seen.map(\.completedBytes)
        #expect(counts.count > 10)
        #expect(counts == counts.sorted())
    }

    @Test func aFormOfFilesIsStreamedAsItsInMemoryEncoding() async throws {
        let server = try RecordingServer { _ in .ok }
        defer { server.close() }
        var form = MultipartForm()
        form.append("Holiday", name: "title")
        form.append(
            contentsOf: try Self.file(1 << 20, seed: 2), name: "photo", fileName: "a.jpg", contentType: "image/jpeg")
        form.append(contentsOf: try Self.file(10, seed: 3), name: "photo", fileName: "b.jpg", contentType: "image/jpeg")
        try await Self.session(server).send(Endpoint(.post, "posts", body: .multipart(form)))
        let request = try #require(server.requests.first)
        #expect(request.body == (try form.encoded()))
        #expect(request.headers["Content-Type"] == form.contentType)
    }

    @Test(arguments: [307, 308]) func aRedirectRepeatsAFileAndRefusesToRepeatAStream(status: Int) async throws {
        let server = try RecordingServer { request in
            request.path == "/uploads" ? .redirect(status, to: "/v2/uploads") : .ok
        }
        defer { server.close() }
        let session = Self.session(server)
        let url = try Self.file(300_000, seed: 4)
        try await session.send(Endpoint(.post, "uploads", body: .file(url)))
        #expect(server.requests.map(\.path) == ["/uploads", "/v2/uploads"])
        #expect(server.requests.map(\.body) == [try Data(contentsOf: url), try Data(contentsOf: url)])

        let stream = try #require(InputStream(url: url))
        do {
            try await session.send(Endpoint(.post, "uploads", body: .stream(stream)))
            Issue.record("a stream was sent twice")
        } catch {
            #expect(error.transportCode == .requestBodyStreamExhausted)
        }
        #expect(server.requests.map(\.path) == ["/uploads", "/v2/uploads", "/uploads"])
        #expect(server.requests.last?.body == (try Data(contentsOf: url)))
    }

    @Test func transfersToAnotherOriginCarryNoCredentials() async throws {
        // A record names a file on a CDN: the download, and an upload to a presigned URL there, get none of
        // the session's credentials, which stay on the API's origin.
        let api = try RecordingServer { _ in .ok }
        let cdn = try RecordingServer { _ in RecordingServer.Answer(status: 200, body: "file bytes") }
        defer {
            api.close()
            cdn.close()
        }
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(api.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            defaultHeaders: ["Cookie": "sid=1"], adapters: [BearerTokenAdapter(token: "secret")])
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("cdn-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        let file = try await session.download(
            Endpoint(.get, "http://127.0.0.1:\(cdn.port)/media/a.bin"), to: destination)
        #expect(file.byteCount == 10)
        try await session.send(
            Endpoint(.put, "http://127.0.0.1:\(cdn.port)/upload/a.bin", body: .file(try Self.file(1_000, seed: 5))))
        try await session.send(Endpoint(.post, "uploads", body: .file(try Self.file(10, seed: 6))))
        #expect(cdn.requests.map(\.path) == ["/media/a.bin", "/upload/a.bin"])
        for request in cdn.requests {
            #expect(request.headers["Authorization"] == nil)
            #expect(request.headers["Cookie"] == nil)
        }
        #expect(api.requests.first?.headers["Authorization"] == "Bearer secret")
        #expect(api.requests.first?.headers["Cookie"] == "sid=1")
    }

    @Test func anUploadThatStopsMovingEndsByItsInactivityTimeout() async throws {
        // The server accepts and reads nothing: once the socket's buffers are full, no byte moves. The
        // session's one-second time limit does not apply to the upload; its inactivity timeout of one second
        // ends it.
        let server = try SilentServer()
        defer { server.close() }
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(50)),
            timeLimit: .seconds(1))
        var endpoint = Endpoint(.post, "uploads", body: .file(try Self.file(32 << 20, seed: 7)))
        endpoint.inactivityTimeout = .seconds(1)
        let progress = TransferProgress(interval: .zero)
        endpoint.uploadProgress = progress
        let start = ContinuousClock.now
        do {
            try await session.send(endpoint)
            Issue.record("a server that reads nothing took the upload")
        } catch {
            #expect(error == .timeout, "\(error)")
        }
        // Ended by the inactivity timeout, long before the transport's 50 s.
        #expect(ContinuousClock.now - start < .seconds(40))
        #expect(progress.status.isFinished)
        #expect(progress.status.completedBytes < 32 << 20)
    }

    @Test func aStreamAnswered401OnASocketIsTheAnswerAndAFileIsResentWithTheNewToken() async throws {
        // The server refuses the first token and takes the refreshed one.
        let server = try RecordingServer { request in
            request.headers["Authorization"] == "Bearer new"
                ? .ok : RecordingServer.Answer(status: 401, headers: ["Content-Type": "application/json"], body: "{}")
        }
        defer { server.close() }
        let refreshes = Locked(0)
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)", transport: URLSessionTransport(timeout: .seconds(45)),
            authenticator: BearerAuthenticator(
                token: { refreshes.withLock { $0 } == 0 ? "old" : "new" },
                refresh: { (_: String) async throws(NetworkError) -> String in
                    refreshes.withLock { $0 += 1 }
                    return "new"
                }))
        let url = try Self.file(100_000, seed: 8)
        let stream = try #require(InputStream(url: url))
        do {
            try await session.send(Endpoint(.post, "uploads", body: .stream(stream)))
            Issue.record("a 401 was not the answer")
        } catch {
            #expect(error.statusCode == 401, "\(error)")
        }
        #expect(server.requests.count == 1)
        #expect(refreshes.withLock { $0 } == 0)
        try await session.send(Endpoint(.post, "uploads", body: .file(url)))
        #expect(server.requests.map { $0.headers["Authorization"] } == ["Bearer old", "Bearer old", "Bearer new"])
        #expect(server.requests.last?.body == (try Data(contentsOf: url)))
    }
}
