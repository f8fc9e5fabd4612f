import Foundation
import ResourceKit
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `session.bytes(_:)` on `URLSessionTransport`, against httpbin over real sockets.
@Suite(.enabled(if: HTTPBin.isConfigured, HTTPBin.skipReason), .timeLimit(.minutes(2)))
struct StreamingHTTPBinTests {
    let session = HTTPBin.session(adapters: [])

    @Test func streamBytesAddUp() async throws {
        let response = try await session.bytes(
            Endpoint(.get, "stream-bytes/100000", query: ["chunk_size": "1000", "seed": "7"]))
        #expect(response.statusCode == 200)
        var total = 0
        for try await chunk in response.body { total += chunk.count }
        #expect(total == 100_000)
        // The same bytes as `send` gets, on a body that is the same every time (httpbin's random bytes are
        // not, when other requests share its generator).
        let whole = try await session.data(for: Endpoint(.get, "range/50000"))
        let again = try await session.bytes(Endpoint(.get, "range/50000"))
        #expect(try await again.body.collect(upTo: 1 << 20) == whole)
    }

    @Test func aDripArrivesWhole() async throws {
        // Five bytes over two seconds.
        let response = try await session.bytes(
            Endpoint(.get, "drip", query: ["duration": "2", "numbytes": "5", "delay": "0", "code": "200"]))
        #expect(response.expectedLength == 5)
        var chunks: [Data] = []
        for try await chunk in response.body { chunks.append(chunk) }
        // How many chunks depends on how soon the reader runs: a reader that falls behind takes what waits
        // in one piece. `SocketStreamingTests` shows a first byte read before the rest is sent.
        #expect(chunks.reduce(0) { $0 + $1.count } == 5)
    }

    @Test func theTimeLimitEndsWhenTheHeadArrives() async throws {
        // The body takes two seconds; the limit is half a second, and it is met by the head.
        let response = try await session.bytes(
            Endpoint(
                .get, "drip", query: ["duration": "2", "numbytes": "4", "delay": "0"],
                timeLimit: .milliseconds(500)))
        #expect(try await response.body.collect(upTo: 100).count == 4)
    }

    @Test func linesOfAJSONStream() async throws {
        let response = try await session.bytes(Endpoint(.get, "stream/4"))
        var ids: [Int] = []
        for try await line in response.body.lines() {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            if let id = object?["id"] as? Int { ids.append(id) }
        }
        #expect(ids == [0, 1, 2, 3])
    }

    @Test func bytesOfAFixedLengthBodyAndARefusedStatus() async throws {
        let response = try await session.bytes(Endpoint(.get, "bytes/4096"))
        #expect(response.expectedLength == 4096)
        #expect(try await response.body.collect(upTo: 4096).count == 4096)
        do {
            _ = try await session.bytes(Endpoint(.get, "status/418"))
            Issue.record("a 418 passed validation")
        } catch {
            #expect(error.statusCode == 418)
        }
    }

    @Test func aRedirectIsFollowedByTheSession() async throws {
        let response = try await session.bytes(
            Endpoint(.get, "redirect-to", query: ["url": "/bytes/10", "status_code": "302"]))
        #expect(response.url?.path == "/bytes/10")
        #expect(try await response.body.collect(upTo: 10).count == 10)
    }

    @Test func anAuthenticationChallengeComesBackAsItsResponse() async throws {
        do {
            _ = try await session.bytes(Endpoint(.get, "basic-auth/ann/secret", timeLimit: .seconds(5)))
            Issue.record("a 401 passed validation")
        } catch {
            #expect(error.statusCode == 401)
        }
    }

    @Test func cancellingTheReaderEndsALongTransfer() async throws {
        // Thirty bytes over thirty seconds; the reader stops after the first.
        let response = try await session.bytes(
            Endpoint(.get, "drip", query: ["duration": "30", "numbytes": "30", "delay": "0"]))
        let gotFirst = AsyncStream<Void>.makeStream()
        let reader = Task {
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
            gotFirst.continuation.yield()
            while try await iterator.next() != nil {}
        }
        for await _ in gotFirst.stream { break }
        reader.cancel()
        do {
            try await reader.value
            Issue.record("a cancelled reader read to the end")
        } catch let error as NetworkError {
            #expect(error == .cancelled)
        }
    }

    @Test func aServerThatIsNotThereFailsBeforeTheHead() async throws {
        let session = NetworkSession(
            baseURL: "http://127.0.0.1:9/", transport: URLSessionTransport(timeout: .seconds(5)))
        do {
            _ = try await session.bytes(Endpoint(.get, "anything"))
            Issue.record("a closed port answered")
        } catch {
            #expect(error.code == .transport)
        }
    }
}

/// `session.download(_:to:progress:)` against httpbin's `/range`, whose bytes are `a` to `z` over and over
/// and which answers `Range` with `206`.
@Suite(.enabled(if: HTTPBin.isConfigured, HTTPBin.skipReason), .timeLimit(.minutes(2)))
struct DownloadHTTPBinTests {
    let session = HTTPBin.session(adapters: [])

    static func expected(_ count: Int) -> Data { Data((0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }) }

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func aDownloadLandsWhole() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("range.txt")
        let progress = TransferProgress()
        let file = try await session.download(Endpoint(.get, "range/5000"), to: destination, progress: progress)
        #expect(file.byteCount == 5000)
        #expect(try Data(contentsOf: destination) == Self.expected(5000))
        #expect(progress.status == TransferProgress.Status(completedBytes: 5000, expectedBytes: 5000, isFinished: true))
    }

    @Test func aCancelledDownloadResumesFromWhereItStopped() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("range.txt")
        // 3,000 bytes in chunks of 100, one a second: cancelled once some have come, however slow the machine.
        let progress = TransferProgress(interval: .zero)
        let updates = progress.updates()
        let slow = Task {
            try await session.download(
                Endpoint(.get, "range/3000", query: ["duration": "30", "chunk_size": "100"]), to: destination,
                progress: progress)
        }
        for await status in updates where status.completedBytes >= 100 { break }
        slow.cancel()
        do {
            _ = try await slow.value
            Issue.record("a cancelled download completed")
        } catch let error as NetworkError {
            #expect(error == .cancelled)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let file = try await session.download(Endpoint(.get, "range/3000"), to: destination)
        #expect(file.statusCode == 206)
        #expect(file.resumedFrom >= 100)
        #expect(file.resumedFrom < 3000)
        #expect(try Data(contentsOf: destination) == Self.expected(3000))
    }
}

/// A multipart form as httpbin parses it.
@Suite(.enabled(if: HTTPBin.isConfigured, HTTPBin.skipReason), .timeLimit(.minutes(1)))
struct MultipartHTTPBinTests {
    struct Echo: Decodable {
        var form: [String: String]
        var files: [String: String]
    }

    @Test func fieldsAndFilesArriveAsSent() async throws {
        var form = MultipartForm()
        form.append("Holiday", name: "title")
        form.append("naïve ☀︎", name: "note")
        form.append(Data("first file".utf8), name: "one", fileName: "one.txt", contentType: "text/plain")
        form.append(Data("second file".utf8), name: "two", fileName: "two.txt", contentType: "text/plain")
        let echo: Echo = try await HTTPBin.session(adapters: []).send(
            Endpoint(.post, "anything", body: .multipart(form)))
        #expect(echo.form == ["title": "Holiday", "note": "naïve ☀︎"])
        #expect(echo.files == ["one": "first file", "two": "second file"])
    }

    static func textFile(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("httpbin-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func filesAppendedByURLArriveStreamedFromDisk() async throws {
        let long = String(repeating: "line of the first file\n", count: 20_000)
        var form = MultipartForm()
        form.append("Holiday", name: "title")
        form.append(contentsOf: try Self.textFile(long), name: "one", contentType: "text/plain")
        form.append(contentsOf: try Self.textFile("second file"), name: "two", contentType: "text/plain")
        let echo: Echo = try await HTTPBin.session(adapters: []).send(
            Endpoint(.post, "anything", body: .multipart(form)))
        #expect(echo.form == ["title": "Holiday"])
        #expect(echo.files == ["one": long, "two": "second file"])
    }

    struct DataEcho: Decodable {
        var data: String
        var headers: [String: String]
    }

    @Test func aFileBodyArrivesWholeAndA307RepeatsItButNotAStream() async throws {
        let session = HTTPBin.session(adapters: [])
        // Small enough to be sent whole before httpbin answers the redirect, which it does without reading the
        // body (a larger one could meet a closed connection while it is still being sent).
        let text = String(repeating: "0123456789", count: 2_000)
        let file = try Self.textFile(text)
        let direct: DataEcho = try await session.send(
            Endpoint(.post, "anything", body: .file(file, contentType: "text/plain")))
        #expect(direct.data == text)
        #expect(direct.headers["Content-Type"] == "text/plain")
        // httpbin's redirect-to answers any method; a 307 repeats the method and the body.
        let redirect = Endpoint(
            .post, "redirect-to", query: ["url": "/anything", "status_code": "307"],
            body: .file(file, contentType: "text/plain"))
        let repeated: DataEcho = try await session.send(redirect)
        #expect(repeated.data == text)
        let stream = try #require(InputStream(url: file))
        var once = redirect
        once.body = .stream(stream, contentType: "text/plain")
        do {
            _ = try await session.send(once, as: DataEcho.self)
            Issue.record("a stream was sent again after a 307")
        } catch {
            #expect(error.transportCode == .requestBodyStreamExhausted)
        }
    }
}
