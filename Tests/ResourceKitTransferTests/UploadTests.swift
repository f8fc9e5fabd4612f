import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import ResourceKitTransfer
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Files and streams as request bodies, through the session and the testing kit's transports.
@Suite(.timeLimit(.minutes(1)), .offThePool) struct UploadTests {
    /// A file of `count` bytes of a repeating pattern, in a fresh directory.
    static func file(_ count: Int, named name: String = "upload.bin", byte: (Int) -> UInt8 = { UInt8($0 % 251) })
        throws -> URL
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data((0..<count).map(byte)).write(to: url)
        return url
    }

    static func session(_ transport: any HTTPTransport, retry: RetryPolicy = .never) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport, retry: retry)
    }

    @Test func aFileIsSentAsItsBytesWithItsContentType() async throws {
        let url = try Self.file(200_000)
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: 201, json: "{}")
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.post, "uploads", body: .file(url, contentType: "video/mp4"))
        endpoint.uploadProgress = progress
        try await Self.session(stub).send(endpoint)
        let request = try #require(stub.requests.first)
        #expect(request.httpBody == (try Data(contentsOf: url)))
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "video/mp4")
        #expect(
            progress.status
                == TransferProgress.Status(completedBytes: 200_000, expectedBytes: 200_000, isFinished: true))
    }

    @Test func progressCountsEveryReadThenFinishes() async throws {
        // 150,000 bytes, read by the stub 64 KB at a time.
        let stub = StubTransport()
        stub.stub(.put, "/api/blobs/1", status: 204)
        let progress = TransferProgress(interval: .zero)
        let updates = progress.updates()
        var endpoint = Endpoint(.put, "blobs/1", body: .data(Data(count: 150_000), contentType: "application/x"))
        endpoint.uploadProgress = progress
        try await Self.session(stub).send(endpoint)
        var seen: [TransferProgress.Status] = []
        for await status in updates { seen.append(status) }
        #expect(
            seen == [
                .init(completedBytes: 0),
                .init(completedBytes: 0, expectedBytes: 150_000),
                .init(completedBytes: 65_536, expectedBytes: 150_000),
                .init(completedBytes: 131_072, expectedBytes: 150_000),
                .init(completedBytes: 150_000, expectedBytes: 150_000),
                .init(completedBytes: 150_000, expectedBytes: 150_000, isFinished: true),
            ])
        // A body in memory with a progress is streamed, so that it can be counted; its bytes are the same.
        #expect(stub.requests.first?.httpBody == Data(count: 150_000))
    }

    @Test func aFailedUploadFinishesItsProgressToo() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: 413, json: #"{"message":"too large"}"#)
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.post, "uploads", body: .file(try Self.file(10), contentType: "text/plain"))
        endpoint.uploadProgress = progress
        await #expect(throws: NetworkError.self) { try await Self.session(stub).send(endpoint) }
        #expect(progress.status.isFinished)
        #expect(progress.status.completedBytes == 10)
    }

    @Test func aFileThatCannotBeReadFailsBeforeAnyRequest() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: 201, json: "{}")
        let session = Self.session(stub)
        let directory = try Self.file(1).deletingLastPathComponent()
        let bodies: [RequestBody] = [
            .file(directory.appendingPathComponent("missing.bin")),
            .file(directory),
            .file(URL(string: "https://example.com/a.bin")!),
        ]
        for body in bodies {
            do {
                try await session.send(Endpoint(.post, "uploads", body: body))
                Issue.record("\(body) was sent")
            } catch {
                #expect(error.code == .file)
            }
        }
        var form = MultipartForm()
        form.append(contentsOf: directory.appendingPathComponent("missing.jpg"), name: "photo")
        do {
            try await session.send(Endpoint(.post, "uploads", body: .multipart(form)))
            Issue.record("a form with a missing file was sent")
        } catch {
            #expect(error.code == .file)
        }
        #expect(stub.requestCount == 0)
    }

    @Test func aFormWithFilesIsStreamedAsTheSameBytesItEncodesTo() async throws {
        let photo = try Self.file(100_000, named: "beach.jpg")
        let notes = try Self.file(3, named: "notes.txt") { _ in UInt8(ascii: "n") }
        var form = MultipartForm(boundary: "XyZ")
        form.append("Holiday", name: "title")
        form.append(contentsOf: photo, name: "photo", contentType: "image/jpeg")
        form.append(Data("mem".utf8), name: "raw", fileName: "raw.bin")
        form.append(contentsOf: notes, name: "notes", fileName: "n.txt", contentType: "text/plain")
        let stub = StubTransport()
        stub.stub(.post, "/api/posts", status: 201, json: "{}")
        try await Self.session(stub).send(Endpoint(.post, "posts", body: .multipart(form)))
        var expected = Data(
            ("--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHoliday\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"beach.jpg\"\r\n"
                + "Content-Type: image/jpeg\r\n\r\n").utf8)
        expected.append(try Data(contentsOf: photo))
        expected.append(
            Data(
                ("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"raw\"; filename=\"raw.bin\"\r\n"
                    + "Content-Type: application/octet-stream\r\n\r\nmem\r\n"
                    + "--XyZ\r\nContent-Disposition: form-data; name=\"notes\"; filename=\"n.txt\"\r\n"
                    + "Content-Type: text/plain\r\n\r\nnnn\r\n--XyZ--\r\n").utf8))
        let request = try #require(stub.requests.first)
        #expect(request.httpBody == expected)
        #expect(try form.encoded() == expected)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/form-data; boundary=XyZ")
    }

    @Test(arguments: [0, 65_530, 65_533, 65_536, 200_000])
    func aBoundaryInsideAFileFailsWithEncoding(offset: Int) async throws {
        // The delimiter "--cut" placed at `offset`, so that it straddles the stub's 64 KB reads at 65,533.
        let marker = Array("--cut".utf8)
        let file = try Self.file(offset + 100) { index in
            index >= offset && index < offset + marker.count ? marker[index - offset] : UInt8(ascii: "a")
        }
        var form = MultipartForm(boundary: "cut")
        form.append(contentsOf: file, name: "f")
        let stub = StubTransport()
        stub.stub(.post, "/api/posts", status: 201, json: "{}")
        do {
            try await Self.session(stub).send(Endpoint(.post, "posts", body: .multipart(form)))
            Issue.record("a file holding the boundary was sent")
        } catch {
            #expect(error.code == .encoding)
        }
        #expect(stub.requestCount == 0)
        #expect(throws: NetworkError.self) { try form.encoded() }
    }

    @Test func aRetryReadsTheFileAgainFromItsStart() async throws {
        let url = try Self.file(70_000)
        let stub = StubTransport()
        let calls = Locked(0)
        stub.stub(.put, "/api/blobs/1") { _ in
            let call = calls.withLock { count in
                count += 1
                return count
            }
            return HTTPResponse(statusCode: call == 1 ? 503 : 204)
        }
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.put, "blobs/1", body: .file(url))
        endpoint.uploadProgress = progress
        try await Self.session(stub, retry: .init(maximumAttempts: 2, initialDelay: .zero, jitter: .none)).send(
            endpoint)
        #expect(stub.requests.map(\.httpBody) == [try Data(contentsOf: url), try Data(contentsOf: url)])
        // Each attempt starts the progress over: it ends at the file's size, not twice it.
        #expect(progress.status == .init(completedBytes: 70_000, expectedBytes: 70_000, isFinished: true))
    }

    @Test(arguments: [307, 308]) func aRedirectThatKeepsTheBodySendsTheFileAgain(status: Int) async throws {
        let url = try Self.file(1_000)
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: status, headers: ["Location": "/api/v2/uploads"])
        stub.stub(.post, "/api/v2/uploads", status: 201, json: "{}")
        try await Self.session(stub).send(Endpoint(.post, "uploads", body: .file(url)))
        #expect(stub.requests.map(\.httpBody) == [try Data(contentsOf: url), try Data(contentsOf: url)])
        #expect(stub.requests.map(\.httpMethod) == ["POST", "POST"])
    }

    @Test(arguments: [307, 308]) func aRedirectThatWouldRepeatAStreamFailsClearly(status: Int) async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: status, headers: ["Location": "/api/v2/uploads"])
        stub.stub(.post, "/api/v2/uploads", status: 201, json: "{}")
        let body = RequestBody.stream(InputStream(data: Data("once".utf8)), contentType: "text/plain")
        do {
            try await Self.session(stub).send(Endpoint(.post, "uploads", body: body))
            Issue.record("the stream was sent twice")
        } catch {
            #expect(error.transportCode == .requestBodyStreamExhausted)
            #expect(String(describing: error).contains("\(status) redirect"))
        }
        #expect(stub.requests.map(\.httpBody) == [Data("once".utf8)])
    }

    @Test func aSeeOtherAfterAStreamIsFollowedWithoutTheBody() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: 303, headers: ["Location": "/api/uploads/7"])
        stub.stub(.get, "/api/uploads/7", status: 200, json: "{}")
        let body = RequestBody.stream(InputStream(data: Data("once".utf8)), contentType: "text/plain")
        try await Self.session(stub).send(Endpoint(.post, "uploads", body: body))
        #expect(stub.requests.map(\.httpMethod) == ["POST", "GET"])
        #expect(stub.requests.map(\.httpBody) == [Data("once".utf8), nil])
    }

    @Test func aStreamIsNeverRetried() async throws {
        let stub = StubTransport()
        stub.stub(.put, "/api/blobs/1", status: 503)
        let body = RequestBody.stream(InputStream(data: Data("once".utf8)))
        let session = Self.session(stub, retry: .init(maximumAttempts: 3, initialDelay: .zero, jitter: .none))
        await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.put, "blobs/1", body: body)) }
        #expect(stub.requestCount == 1)
        // The same request with a file is retried: the policy does retry this request.
        let file = try Self.file(4)
        await #expect(throws: NetworkError.self) {
            try await session.send(Endpoint(.put, "blobs/1", body: .file(file)))
        }
        #expect(stub.requestCount == 4)
    }

    @Test func theSessionsTimeLimitDoesNotEndAStreamedUpload() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: .seconds(1), clock: clock)
        let upload = Task { try await session.send(Endpoint(.post, "uploads", body: .file(try Self.file(10)))) }
        try await transport.waitForRequests(1)
        #expect(clock.sleepers.isEmpty)
        clock.advance(by: .seconds(300))
        transport.answer(0, json: "{}", status: 201)
        try await upload.value
        // A body in memory keeps the session's limit.
        let small = Task {
            try await session.send(Endpoint(.post, "uploads", body: .data(Data([1]), contentType: "x")))
        }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(1)] }
        clock.advance(by: .seconds(1))
        await #expect(throws: NetworkError.timeout) { try await small.value }
        // An upload's own limit applies.
        let limited = Task {
            try await session.send(
                Endpoint(.post, "uploads", body: .file(try Self.file(10)), timeLimit: .seconds(600)))
        }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.seconds(600)] }
        clock.advance(by: .seconds(600))
        await #expect(throws: NetworkError.timeout) { try await limited.value }
    }

    @Test func anInactivityTimeoutBecomesTheRequestsTimeoutInterval() async throws {
        let session = Self.session(StubTransport())
        var endpoint = Endpoint(.post, "uploads", body: .file(try Self.file(1)), timeLimit: .seconds(30))
        endpoint.inactivityTimeout = .milliseconds(6_200)
        #expect(try await session.makeURLRequest(for: endpoint).timeoutInterval == 7)
        endpoint.inactivityTimeout = nil
        #expect(try await session.makeURLRequest(for: endpoint).timeoutInterval == 30)
    }

    @Test func aBuiltRequestCarriesTheFileAsItsBodyStream() async throws {
        let url = try Self.file(5_000)
        let request = try await Self.session(StubTransport()).makeURLRequest(
            for: Endpoint(.post, "uploads", body: .file(url)))
        #expect(request.httpBody == nil)
        let stream = try #require(request.httpBodyStream)
        stream.open()
        var read = Data()
        var buffer = [UInt8](repeating: 0, count: 1_000)
        while case let count = stream.read(&buffer, maxLength: buffer.count), count > 0 {
            read.append(contentsOf: buffer[0..<count])
        }
        stream.close()
        #expect(read == (try Data(contentsOf: url)))
    }

    @Test func aFileThatVanishesMidUploadFailsWithAFileError() async throws {
        let url = try Self.file(10)
        // The stub removes the file before it reads the body: the session made the request when it was there.
        let transport = RemovingTransport(url: url)
        do {
            try await Self.session(transport).send(Endpoint(.post, "uploads", body: .file(url)))
            Issue.record("a vanished file was sent")
        } catch {
            #expect(error.code == .file)
        }
    }

    @Test func bodiesCompareAsTheirKindsSay() throws {
        let url = try Self.file(1)
        #expect(RequestBody.file(url) == .file(url))
        #expect(RequestBody.file(url, contentType: "a") != .file(url, contentType: "b"))
        let stream = InputStream(data: Data())
        let body = RequestBody.stream(stream)
        #expect(body == body)
        #expect(body != .stream(stream))
        #expect(RequestBody.file(url) != .data(try Data(contentsOf: url), contentType: "application/octet-stream"))
        // A multipart body compares by its form, through the body kind the transfer module composes.
        var form = MultipartForm(boundary: "XyZ")
        form.append("Holiday", name: "title")
        var other = form
        #expect(RequestBody.multipart(form) == .multipart(other))
        other.append("Beach", name: "place")
        #expect(RequestBody.multipart(form) != .multipart(other))
        #expect(RequestBody.multipart(form) != .data(try form.encoded(), contentType: form.contentType))
    }
}

/// Removes a file, then reads the request's body as a transport would.
private struct RemovingTransport: HTTPTransport {
    let url: URL

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        try? FileManager.default.removeItem(at: url)
        let stream = request.httpBodyStream
        stream?.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        let count = stream?.read(&buffer, maxLength: buffer.count) ?? 0
        guard count >= 0 else {
            throw .transport(code: .cannotOpenFile, message: "the body stream failed")
        }
        return HTTPResponse(statusCode: 201)
    }
}
