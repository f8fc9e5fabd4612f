import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import ResourceKitTransfer
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads at their edges: files that are not files, files that change while they are sent, and the rules
/// that hold for `bytes(_:)` and for a credential refresh.
@Suite(.timeLimit(.minutes(1))) struct UploadEdgeTests {
    static func session(_ transport: any HTTPTransport) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", transport: transport)
    }

    @Test func aFIFOFailsBeforeAnyRequestInsteadOfWaitingForAWriter() async throws {
        let directory = try UploadTests.file(1).deletingLastPathComponent()
        let fifo = directory.appendingPathComponent("pipe")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let stub = StubTransport()
        stub.stub(.post, "/api/uploads", status: 201, json: "{}")
        var form = MultipartForm()
        form.append(contentsOf: fifo, name: "f")
        for body in [RequestBody.file(fifo), .multipart(form)] {
            do {
                try await Self.session(stub).send(Endpoint(.post, "uploads", body: body))
                Issue.record("a FIFO was sent")
            } catch {
                #expect(error.code == .file)
                #expect("\(error)".contains("not a regular file"))
            }
        }
        #expect(stub.requestCount == 0)
    }

    @Test func aFileThatBecomesShorterWhileSentFailsAndOneThatGrowsIsSentAsItWas() async throws {
        let url = try UploadTests.file(10_000)
        let original = try Data(contentsOf: url)
        // The file shrinks between the request being built and its body being read.
        let shrinking = ChangingTransport { try Data(original.prefix(4_000)).write(to: url) }
        do {
            try await Self.session(shrinking).send(Endpoint(.post, "uploads", body: .file(url)))
            Issue.record("a file that became shorter was sent")
        } catch {
            #expect(error.code == .file)
            #expect("\(error)".contains("became shorter"))
        }
        // The file grows: it is sent as long as it was.
        try original.write(to: url)
        let growing = ChangingTransport {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 1, count: 5_000))
            try handle.close()
        }
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.post, "uploads", body: .file(url))
        endpoint.uploadProgress = progress
        try await Self.session(growing).send(endpoint)
        #expect(growing.bodies == [original])
        #expect(progress.status == .init(completedBytes: 10_000, expectedBytes: 10_000, isFinished: true))
    }

    @Test func bytesOfAnUploadKeepsTheUploadsRulesAndFinishesItsProgress() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport, timeLimit: .seconds(1), clock: clock)
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.post, "uploads", body: .file(try UploadTests.file(10)))
        endpoint.uploadProgress = progress
        let call = Task { try await session.bytes(endpoint) }
        try await transport.waitForRequests(1)
        // No time limit of the session's runs for an upload, until its head as for its whole call.
        #expect(clock.sleepers.isEmpty)
        clock.advance(by: .seconds(120))
        transport.answer(0, json: "{}", status: 201)
        let response = try await call.value
        #expect(response.statusCode == 201)
        #expect(progress.status.isFinished)
    }

    @Test func aStreamAnswered401IsNotSentAgainAndNoRefreshStarts() async throws {
        let refreshes = Locked(0)
        let transport = ScriptedTransport([.status(401), .status(200)])
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            authenticator: BearerAuthenticator(
                token: { "old" },
                refresh: { (_: String) async throws(NetworkError) -> String in
                    refreshes.withLock { $0 += 1 }
                    return "new"
                }))
        let body = RequestBody.stream(InputStream(data: Data("once".utf8)))
        do {
            try await session.send(Endpoint(.post, "uploads", body: body))
            Issue.record("a 401 was not the answer")
        } catch {
            #expect(error.statusCode == 401, "\(error)")
        }
        #expect(transport.requests.count == 1)
        #expect(refreshes.withLock { $0 } == 0)
        // A file is sent again with the new credential.
        let again = ScriptedTransport([.status(401), .status(200)])
        let filed = NetworkSession(
            baseURL: "http://test.local/api", transport: again,
            authenticator: BearerAuthenticator(
                token: { "old" }, refresh: { (_: String) async throws(NetworkError) -> String in "new" }))
        try await filed.send(Endpoint(.post, "uploads", body: .file(try UploadTests.file(3))))
        #expect(again.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer old", "Bearer new"])
    }

    @Test func aBoundaryWithCharactersATokenMayNotHoldIsQuoted() async throws {
        var form = MultipartForm(boundary: "with space (and more)")
        form.append("x", name: "title")
        #expect(form.contentType == "multipart/form-data; boundary=\"with space (and more)\"")
        #expect(MultipartForm(boundary: "plain-1.2_3+'").contentType == "multipart/form-data; boundary=plain-1.2_3+'")
        // A server that unquotes it reads the form.
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts", requiredFields: ["title"])
        struct Created: Decodable { var title: String }
        let created: Created = try await Self.session(backend).send(
            Endpoint(.post, "posts", body: .multipart(form)))
        #expect(created.title == "x")
    }

    @Test func anUnreachableBackendReadsNoneOfTheUpload() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        backend.isReachable = false
        let progress = TransferProgress(interval: .zero)
        var endpoint = Endpoint(.post, "posts", body: .file(try UploadTests.file(5_000)))
        endpoint.uploadProgress = progress
        await #expect(throws: NetworkError.self) { try await Self.session(backend).send(endpoint) }
        #expect(progress.status == .init(completedBytes: 0, expectedBytes: 5_000, isFinished: true))
    }
}

/// Changes the file before it reads the request's body, as a transport that reads late would see it.
private final class ChangingTransport: HTTPTransport {
    let change: @Sendable () throws -> Void
    private let received = Locked<[Data]>([])

    init(_ change: @escaping @Sendable () throws -> Void) { self.change = change }

    var bodies: [Data] { received.withLock { $0 } }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        do { try change() } catch { throw .file("the test could not change the file: \(error)") }
        let read = try request.readingBodyStreamForTests()
        received.withLock { $0.append(read) }
        return HTTPResponse(statusCode: 201)
    }
}

extension URLRequest {
    /// The body stream read whole, as a transport would; a failed read throws the stream's error.
    func readingBodyStreamForTests() throws(NetworkError) -> Data {
        guard let stream = httpBodyStream else { return httpBody ?? Data() }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw (stream.streamError as? NetworkError) ?? .file("the stream failed") }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }
}
