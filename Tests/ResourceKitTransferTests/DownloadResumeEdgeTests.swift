import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A file server for a ten-byte body whose first answer is cut after four bytes, and whose later answers are
/// scripted per test: what a resume meets in the wild.
final class ScriptedFileServer: Sendable {
    struct Reply: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
        var cutAfter: Int?
    }

    private let replies: Locked<[Reply]>
    private let asked = Locked<[URLRequest]>([])

    init(_ replies: [Reply]) { self.replies = Locked(replies) }

    var requests: [URLRequest] { asked.withLock { $0 } }

    func respond(_ request: URLRequest) -> StreamedResponse {
        asked.withLock { $0.append(request) }
        let reply = replies.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
        let (stream, writer) = ResponseBody.makeStream()
        if let cut = reply.cutAfter {
            writer.yield(reply.body.prefix(cut))
            writer.finish(throwing: .transport(code: .networkConnectionLost, message: "cut"))
        } else {
            writer.yield(reply.body)
            writer.finish()
        }
        return StreamedResponse(statusCode: reply.status, headers: reply.headers, url: request.url, body: stream)
    }
}

@Suite(.timeLimit(.minutes(1))) struct DownloadResumeEdgeTests {
    let stub = StubTransport()
    let body = Data((0..<10).map { UInt8(ascii: "a") + $0 })
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func session(_ validation: any ValidationProviding = StatusCodeValidation()) -> NetworkSession {
        NetworkSession(baseURL: "http://test.local/api", validation: validation, transport: stub)
    }

    func whole(_ headers: HTTPHeaders = [:], cut: Int? = nil) -> ScriptedFileServer.Reply {
        var headers = headers
        headers["Content-Length"] = "10"
        return .init(status: 200, headers: headers, body: body, cutAfter: cut)
    }

    func rest(_ headers: HTTPHeaders = [:]) -> ScriptedFileServer.Reply {
        var headers = headers
        headers["Content-Range"] = "bytes 4-9/10"
        headers["Content-Length"] = "6"
        return .init(status: 206, headers: headers, body: body.subdata(in: 4..<10))
    }

    /// Downloads once, cut after four bytes: the partial file and its validator stay.
    func interrupted(_ session: NetworkSession, _ endpoint: Endpoint, to destination: URL) async {
        await #expect(throws: NetworkError.self) { try await session.download(endpoint, to: destination) }
    }

    /// A presigned URL whose signature changes between attempts still resumes: its query is no part of it.
    @Test func aPresignedURLResumesWhateverItsSignature() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = ScriptedFileServer([whole(["ETag": "\"v1\""], cut: 4), rest(["ETag": "\"v1\""])])
        stub.stubStreaming(.get, "/v") { server.respond($0) }
        let destination = directory.appendingPathComponent("v.bin")
        await interrupted(session(), Endpoint(.get, "http://test.local/v?sig=a"), to: destination)
        let file = try await session().download(Endpoint(.get, "http://test.local/v?sig=b#top"), to: destination)
        #expect(file.resumedFrom == 4)
        #expect(server.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=4-")
        #expect(try Data(contentsOf: destination) == body)
    }

    /// A server that sends its `ETag` without quotes and then a `206` of another version: started over.
    @Test func aChangedUnquotedTagStartsOver() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = ScriptedFileServer([whole(["ETag": "v1"], cut: 4), rest(["ETag": "v2"]), whole(["ETag": "v2"])])
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = directory.appendingPathComponent("file.bin")
        await interrupted(session(), Endpoint(.get, "file"), to: destination)
        let file = try await session().download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 200)
        #expect(file.resumedFrom == 0)
        #expect(server.requests.map { $0.value(forHTTPHeaderField: "If-Range") } == [nil, "\"v1\"", nil])
        #expect(try Data(contentsOf: destination) == body)
    }

    /// A `416` the validation provider lets through completes a partial file that holds it all, as a rejected
    /// one does; it no longer fails every later download.
    @Test func anAcceptedRangeNotSatisfiableCompletesTheFile() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let unsatisfiable = ScriptedFileServer.Reply(
            status: 416, headers: ["Content-Range": "bytes */10"], body: Data(), cutAfter: nil)
        let server = ScriptedFileServer([whole(["ETag": "\"v1\""], cut: 10), unsatisfiable])
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = directory.appendingPathComponent("file.bin")
        let accepting = session(StatusCodeValidation(acceptable: 200...))
        await interrupted(accepting, Endpoint(.get, "file"), to: destination)
        let file = try await accepting.download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 416)
        #expect(file.resumedFrom == 10)
        #expect(try Data(contentsOf: destination) == body)
    }

    /// A continuation that comes compressed anyway counts other bytes than the file's: started over.
    @Test func aCompressedContinuationStartsOver() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = ScriptedFileServer([
            whole(["ETag": "\"v1\""], cut: 4), rest(["ETag": "\"v1\"", "Content-Encoding": "gzip"]),
            whole(["ETag": "\"v1\""]),
        ])
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = directory.appendingPathComponent("file.bin")
        await interrupted(session(), Endpoint(.get, "file"), to: destination)
        let file = try await session().download(Endpoint(.get, "file"), to: destination)
        #expect(file.resumedFrom == 0)
        #expect(server.requests.map { $0.value(forHTTPHeaderField: "Range") } == [nil, "bytes=4-", nil])
        #expect(try Data(contentsOf: destination) == body)
    }

    /// An empty transfer is done once finished.
    @Test func anEmptyTransferIsDoneWhenFinished() {
        #expect(TransferProgress.Status(completedBytes: 0, expectedBytes: 0).fractionCompleted == 0)
        #expect(TransferProgress.Status(completedBytes: 0, expectedBytes: 0, isFinished: true).fractionCompleted == 1)
        #expect(TransferProgress.Status(completedBytes: 5, expectedBytes: nil).fractionCompleted == nil)
    }
}
