import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A directory of its own for each test, removed at the end.
private final class Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Every name in the directory, hidden ones too.
    var names: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted() }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A file server for one body: honours `Range` with `If-Range` against its `ETag`, and can cut the body
/// after some bytes, once.
private final class RangeServer: Sendable {
    private struct State {
        var body: Data
        var etag: String?
        var cutAfter: Int?
        var rangeHeaders: [String?] = []
        /// A resumed part that names no total and the largest length 64 bits hold (a hostile server).
        var hugeLength = false
    }
    private let state: Locked<State>

    init(body: Data, etag: String?, cutAfter: Int? = nil) {
        state = Locked(State(body: body, etag: etag, cutAfter: cutAfter))
    }

    func change(to body: Data, etag: String) { state.withLock { ($0.body, $0.etag) = (body, etag) } }

    func sendHugeLengths() { state.withLock { $0.hugeLength = true } }

    /// The `Range` header of each request, in order.
    var ranges: [String?] { state.withLock { $0.rangeHeaders } }

    func respond(_ request: URLRequest) -> StreamedResponse {
        let (body, etag, cut, huge) = state.withLock { state in
            state.rangeHeaders.append(request.value(forHTTPHeaderField: "Range"))
            defer { state.cutAfter = nil }
            return (state.body, state.etag, state.cutAfter, state.hugeLength)
        }
        var headers = HTTPHeaders()
        if let etag { headers["ETag"] = etag }
        var status = 200
        var part = body
        if let range = request.value(forHTTPHeaderField: "Range"), range.hasPrefix("bytes="),
            let start = Int(range.dropFirst(6).dropLast()), request.value(forHTTPHeaderField: "If-Range") == etag
        {
            status = 206
            part = body.subdata(in: start..<body.count)
            headers["Content-Range"] = "bytes \(start)-\(body.count - 1)/\(huge ? "*" : "\(body.count)")"
        }
        headers["Content-Length"] = status == 206 && huge ? "\(Int64.max)" : "\(part.count)"
        let (stream, writer) = ResponseBody.makeStream()
        if let cut {
            writer.yield(part.prefix(cut))
            writer.finish(throwing: .transport(code: .networkConnectionLost, message: "cut"))
        } else {
            writer.yield(part)
            writer.finish()
        }
        return StreamedResponse(statusCode: status, headers: headers, url: request.url, body: stream)
    }
}

@Suite(.timeLimit(.minutes(1))) struct DownloadTests {
    let stub = StubTransport()
    var session: NetworkSession { NetworkSession(baseURL: "http://test.local/api", transport: stub) }
    let body = Data((0..<10).map { UInt8(ascii: "a") + $0 })

    @Test func theBodyLandsAtTheDestinationWithItsProgress() async throws {
        let scratch = try Scratch()
        let piece = 256 * 1024
        let pieces = (0..<3).map { Data(repeating: UInt8(ascii: "a") + UInt8($0), count: piece) }
        // The writer waits after each piece until it is read: the download writes (and reports) one at a time.
        stub.stub(
            .get, "/api/file", headers: ["Content-Length": "\(3 * piece)"], chunks: pieces, bufferingLimit: 1)
        let progress = TransferProgress(interval: .zero)
        // Made before the download: the stream holds every status from the current one on.
        let stream = progress.updates()
        let updates = Task {
            var seen: [String] = []
            for await status in stream { seen.append(status.description) }
            return seen
        }
        let file = try await session.download(
            Endpoint(.get, "file"), to: scratch.file("file.bin"), progress: progress)
        #expect(file.byteCount == 3 * piece)
        #expect(file.resumedFrom == 0)
        #expect(file.statusCode == 200)
        #expect(try Data(contentsOf: scratch.file("file.bin")) == pieces.reduce(Data(), +))
        #expect(scratch.names == ["file.bin"])
        #expect(
            await updates.value == [
                "0 bytes", "0 of 786432 bytes", "262144 of 786432 bytes", "524288 of 786432 bytes",
                "786432 of 786432 bytes", "786432 of 786432 bytes, finished",
            ])
        #expect(progress.completedBytes == 3 * piece)
        #expect(progress.status.fractionCompleted == 1)
    }

    /// A resumed part whose length, added to the offset, passes what 64 bits hold is a part of unknown length,
    /// not a trap.
    @Test func aResumedPartOfAnImpossibleLengthIsOfUnknownLength() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"v1\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        await #expect(throws: NetworkError.self) {
            try await session.download(Endpoint(.get, "file"), to: destination)
        }
        server.sendHugeLengths()
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 206)
        #expect(file.resumedFrom == 4)
        #expect(try Data(contentsOf: destination) == body)
    }

    @Test func anInterruptedDownloadResumesWithTheRestOnly() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"v1\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        do {
            _ = try await session.download(Endpoint(.get, "file"), to: destination)
            Issue.record("a cut download succeeded")
        } catch {
            #expect(error.transportCode == .networkConnectionLost)
        }
        // Nothing under the destination's name.
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 206)
        #expect(file.resumedFrom == 4)
        #expect(file.byteCount == 10)
        #expect(try Data(contentsOf: destination) == body)
        #expect(server.ranges == [nil, "bytes=4-"])
        #expect(stub.requests.last?.value(forHTTPHeaderField: "If-Range") == "\"v1\"")
        #expect(scratch.names == ["file.bin"])
    }

    @Test func aResourceThatChangedStartsOver() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"v1\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        _ = try? await session.download(Endpoint(.get, "file"), to: destination)
        let changed = Data("0123456789AB".utf8)
        server.change(to: changed, etag: "\"v2\"")
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 200)
        #expect(file.resumedFrom == 0)
        #expect(try Data(contentsOf: destination) == changed)
        // It asked for the rest of v1, and got the whole of v2.
        #expect(server.ranges == [nil, "bytes=4-"])
    }

    @Test func withoutAValidatorNothingIsResumed() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: nil, cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        _ = try? await session.download(Endpoint(.get, "file"), to: destination)
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.resumedFrom == 0)
        #expect(try Data(contentsOf: destination) == body)
        #expect(server.ranges == [nil, nil])
    }

    @Test func aPartialContentThatDoesNotContinueTheFileIsRefused() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"v1\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        _ = try? await session.download(Endpoint(.get, "file"), to: destination)
        stub.stubStreaming(.get, "/api/file") { request in
            StreamedResponse(
                statusCode: 206, headers: ["Content-Range": "bytes 2-9/10", "ETag": "\"v1\""], url: request.url,
                body: ResponseBody(Data("cdefghij".utf8)))
        }
        do {
            _ = try await session.download(Endpoint(.get, "file"), to: destination)
            Issue.record("a 206 from byte 2 continued a file of 4 bytes")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(scratch.names.isEmpty)
    }

    @Test func aBodyShorterThanAnnouncedIsRefused() async throws {
        let scratch = try Scratch()
        stub.stub(.get, "/api/short", headers: ["Content-Length": "100"], chunks: [Data("only this".utf8)])
        let destination = scratch.file("short.bin")
        do {
            _ = try await session.download(Endpoint(.get, "short"), to: destination)
            Issue.record("9 bytes passed for 100")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func aDownloadAsksForTheBytesUncompressedAndAnEncodedBodyIsNotCountedNorResumed() async throws {
        let scratch = try Scratch()
        // A server that compresses anyway: its length counts compressed bytes, URLSession gives them decoded.
        stub.stub(
            .get, "/api/file", headers: ["Content-Encoding": "gzip", "Content-Length": "3", "ETag": "\"z\""],
            chunks: [body])
        let file = try await session.download(Endpoint(.get, "file"), to: scratch.file("file.bin"))
        #expect(file.byteCount == 10)
        #expect(stub.requests.last?.value(forHTTPHeaderField: "Accept-Encoding") == "identity")
        #expect(scratch.names == ["file.bin"])
    }

    @Test func aPartialFileIsResumedOnlyByADownloadOfTheSameResource() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"same\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/one") { server.respond($0) }
        let other = RangeServer(body: Data("another file".utf8), etag: "\"same\"")
        stub.stubStreaming(.get, "/api/two") { other.respond($0) }
        let destination = scratch.file("file.bin")
        await #expect(throws: NetworkError.self) { try await session.download(Endpoint(.get, "one"), to: destination) }
        // The same validator, another resource: nothing is joined, the other file starts from its first byte.
        let file = try await session.download(Endpoint(.get, "two"), to: destination)
        #expect(file.statusCode == 200)
        #expect(file.resumedFrom == 0)
        #expect(try Data(contentsOf: destination) == Data("another file".utf8))
        #expect(other.ranges == [nil])
    }

    @Test func aPartialContentOfAnotherVersionStartsOver() async throws {
        let scratch = try Scratch()
        // The server honours ranges and ignores If-Range: after a change, its 206 is of the new version.
        let calls = Locked(0)
        let new = Data("0123456789".utf8)
        stub.stubStreaming(.get, "/api/file") { request in
            let call = calls.withLock { count in
                count += 1
                return count
            }
            let (stream, writer) = ResponseBody.makeStream()
            if call == 1 {
                writer.yield(self.body.prefix(4))
                writer.finish(throwing: .transport(code: .networkConnectionLost, message: "cut"))
                return StreamedResponse(
                    statusCode: 200, headers: ["ETag": "\"v1\"", "Content-Length": "10"], body: stream)
            }
            if request.value(forHTTPHeaderField: "Range") != nil {
                writer.yield(new.suffix(6))
                writer.finish()
                return StreamedResponse(
                    statusCode: 206,
                    headers: ["ETag": "\"v2\"", "Content-Range": "bytes 4-9/10", "Content-Length": "6"], body: stream)
            }
            writer.yield(new)
            writer.finish()
            return StreamedResponse(statusCode: 200, headers: ["ETag": "\"v2\"", "Content-Length": "10"], body: stream)
        }
        let destination = scratch.file("file.bin")
        await #expect(throws: NetworkError.self) { try await session.download(Endpoint(.get, "file"), to: destination) }
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.statusCode == 200)
        #expect(try Data(contentsOf: destination) == new)
        #expect(stub.requests.map { $0.value(forHTTPHeaderField: "Range") } == [nil, "bytes=4-", nil])
    }

    @Test func aStatusTheValidationLetsThroughIsNotSavedAsTheFile() async throws {
        let scratch = try Scratch()
        stub.stub(.get, "/api/missing", status: 404, headers: ["Content-Length": "9"], chunks: [Data("not found".utf8)])
        let lenient = NetworkSession(
            baseURL: "http://test.local/api", validation: StatusCodeValidation(acceptable: 200..<500), transport: stub)
        let destination = scratch.file("file.bin")
        do {
            _ = try await lenient.download(Endpoint(.get, "missing"), to: destination)
            Issue.record("a 404 was saved")
        } catch {
            #expect(error.statusCode == 404)
        }
        #expect(scratch.names.isEmpty)
    }

    @Test func aFailedDownloadWithoutAValidatorLeavesNoPartialFile() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: nil, cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        await #expect(throws: NetworkError.self) {
            try await session.download(Endpoint(.get, "file"), to: scratch.file("file.bin"))
        }
        #expect(scratch.names.isEmpty)
    }

    @Test func aBadDestinationStillFinishesTheProgress() async throws {
        let progress = TransferProgress()
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID().uuidString)/f")
        await #expect(throws: NetworkError.self) {
            try await session.download(Endpoint(.get, "file"), to: missing, progress: progress)
        }
        #expect(progress.status.isFinished)
        #expect(stub.requestCount == 0)
    }

    @Test func aBodyLongerThanAnnouncedIsRefused() async throws {
        let scratch = try Scratch()
        stub.stub(.get, "/api/long", headers: ["Content-Length": "5"], chunks: [Data("far more than five".utf8)])
        let destination = scratch.file("long.bin")
        do {
            _ = try await session.download(Endpoint(.get, "long"), to: destination)
            Issue.record("18 bytes passed for 5")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func badDestinationsFailBeforeAnyRequest() async throws {
        let scratch = try Scratch()
        stub.stub(.get, "/api/file", body: body)
        for destination in [
            scratch.file("missing/file.bin"), scratch.url, try #require(URL(string: "https://example.com/file.bin")),
        ] {
            do {
                _ = try await session.download(Endpoint(.get, "file"), to: destination)
                Issue.record("downloaded to \(destination)")
            } catch {
                #expect(error.code == .file, "\(destination): \(error)")
            }
        }
        #expect(stub.requestCount == 0)
    }

    @Test func aFullDiskFailsClearlyAndLeavesNoFileUnderTheName() async throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let scratch = try Scratch()
        stub.stub(.get, "/api/file", chunks: [body])
        let destination = scratch.file("file.bin")
        // The partial file is /dev/full: every write fails with ENOSPC.
        try FileManager.default.createSymbolicLink(
            atPath: scratch.file(".file.bin.partial").path, withDestinationPath: "/dev/full")
        do {
            _ = try await session.download(Endpoint(.get, "file"), to: destination)
            Issue.record("a write to /dev/full succeeded")
        } catch {
            #expect(error.code == .file)
            #expect(error.message.contains("space"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func aRefusedStatusLeavesThePartialFileForLater() async throws {
        let scratch = try Scratch()
        let server = RangeServer(body: body, etag: "\"v1\"", cutAfter: 4)
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let destination = scratch.file("file.bin")
        _ = try? await session.download(Endpoint(.get, "file"), to: destination)
        stub.stub(.get, "/api/file", status: 503)
        await #expect(throws: NetworkError.self) { try await session.download(Endpoint(.get, "file"), to: destination) }
        stub.stubStreaming(.get, "/api/file") { server.respond($0) }
        let file = try await session.download(Endpoint(.get, "file"), to: destination)
        #expect(file.resumedFrom == 4)
        #expect(try Data(contentsOf: destination) == body)
    }
}
