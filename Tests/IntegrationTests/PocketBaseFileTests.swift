import Foundation
import ResourceKit
import ResourceKitPocketBase
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Records with files against a real PocketBase: the `attachments` collection `Scripts/pocketbase` creates
/// (at most 5 files a record, 1 MB each, text, PNG or octet-stream).
@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(2)))
struct PocketBaseFileTests {
    struct Attachment: Codable, Sendable, Equatable {
        var id: String
        var collectionId: String
        var title: String
        var files: [String]
    }

    /// What a service gives to create a record with files, and the progress it watches.
    struct NewAttachment: Sendable {
        var title: String
        var files: [URL]
        var progress: TransferProgress?
    }

    struct RemoteAttachment: Creatable, Readable {
        typealias Value = Attachment
        typealias ReadRequest = String
        typealias CreateRequest = NewAttachment

        static func readEndpoint(for id: String) -> Endpoint {
            Endpoint(.get, "attachments/records").appending(id: id)
        }

        static func createEndpoint(for request: NewAttachment) -> Endpoint {
            var form = MultipartForm()
            form.append(request.title, name: "title")
            for file in request.files {
                form.append(contentsOf: file, name: "files", contentType: "text/plain")
            }
            var endpoint = Endpoint(.post, "attachments/records", body: .multipart(form))
            endpoint.uploadProgress = request.progress
            return endpoint
        }
    }

    static let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pb-files-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// A text file of `count` bytes that differs by `seed`.
    static func textFile(_ name: String, count: Int, seed: Int) throws -> URL {
        let url = directory.appendingPathComponent(name)
        let letters = Array("abcdefghijklmnopqrstuvwxyz \n".utf8)
        try Data((0..<count).map { letters[($0 * 7 + seed * 13 + $0 / 97) % letters.count] }).write(to: url)
        return url
    }

    /// Downloads a record's file through PocketBase's files API.
    static func download(_ record: Attachment, _ name: String, session: NetworkSession) async throws -> Data {
        let destination = directory.appendingPathComponent("down-\(UUID().uuidString)")
        let progress = TransferProgress()
        let url = "\(PocketBase.url ?? "")/api/files/\(record.collectionId)/\(record.id)/\(name)"
        _ = try await session.download(Endpoint(.get, url), to: destination, progress: progress)
        #expect(progress.status.isFinished)
        return try Data(contentsOf: destination)
    }

    @Test func aRecordWithOneFileAndOneWithSeveralComeBackByteForByte() async throws {
        let session = PocketBase.session()
        let one = try Self.textFile("one.txt", count: 300_000, seed: 1)
        let resource = Resource<RemoteAttachment>(session: session)
        try await resource.create(NewAttachment(title: "One file", files: [one]))
        let record = try #require(resource.value)
        #expect(record.title == "One file")
        #expect(record.files.count == 1)
        #expect(try await Self.download(record, record.files[0], session: session) == Data(contentsOf: one))

        let files = try (0..<3).map { try Self.textFile("many-\($0).txt", count: 50_000 + $0 * 10_000, seed: $0 + 2) }
        let progress = TransferProgress()
        let several = Resource<RemoteAttachment>(session: session)
        try await several.create(NewAttachment(title: "Three files", files: files, progress: progress))
        let record3 = try #require(several.value)
        #expect(record3.files.count == 3)
        // PocketBase renames each file (`many_0_<suffix>.txt`) and keeps their order.
        for (index, name) in record3.files.enumerated() {
            #expect(name.hasPrefix("many_\(index)_"))
            #expect(try await Self.download(record3, name, session: session) == Data(contentsOf: files[index]))
        }
        // The progress counted the whole body: the files and the form's part heads.
        let status = progress.status
        #expect(status.isFinished)
        #expect(status.completedBytes == status.expectedBytes)
        #expect(status.completedBytes > 50_000 + 60_000 + 70_000)
    }

    @Test func theServersFileValidationComesBackAsFieldErrors() async throws {
        let session = PocketBase.session()
        let large = try Self.textFile("large.txt", count: 1_100_000, seed: 9)
        let pdf = Self.directory.appendingPathComponent("paper.pdf")
        try Data("%PDF-1.4\n1 0 obj\n<<>>\nendobj\n".utf8).write(to: pdf)
        for (file, code) in [(large, "maximum allowed file size"), (pdf, "mime type must be one of")] {
            var form = MultipartForm()
            form.append("Refused", name: "title")
            form.append(contentsOf: file, name: "files")
            do {
                try await session.send(Endpoint(.post, "attachments/records", body: .multipart(form)))
                Issue.record("\(file.lastPathComponent) was accepted")
            } catch {
                guard let server = error.serverError else {
                    Issue.record("expected a server error, got \(error)")
                    continue
                }
                #expect(server.status == 400)
                #expect(server.fieldErrors["files"]?.contains(code) == true, "\(server.fieldErrors)")
            }
        }
    }

    @Test func fourLargeFilesStreamedFromDiskArriveIntact() async throws {
        // A record's file sent as the whole body is not PocketBase's API; what it shows is that a large
        // multipart body made of files reaches it intact while read from disk: 4 files of 900 KB.
        let session = PocketBase.session()
        let files = try (0..<4).map { try Self.textFile("big-\($0).txt", count: 900_000, seed: 20 + $0) }
        var form = MultipartForm()
        form.append("Four large files", name: "title")
        for file in files { form.append(contentsOf: file, name: "files") }
        let record: Attachment = try await session.send(
            Endpoint(.post, "attachments/records", body: .multipart(form)), as: Attachment.self)
        #expect(record.files.count == 4)
        for (index, name) in record.files.enumerated() {
            #expect(try await Self.download(record, name, session: session) == Data(contentsOf: files[index]))
        }
    }
}

/// A download from a PocketBase of its own, halted in the middle and resumed. Serialized with `SpillTests`
/// (see `LargeBodyTests`): the download spills to disk, which that suite counts.
extension LargeBodyTests {
    @Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(3)))
    struct PocketBaseResumedDownloadTests {
        struct Archived: Decodable {
            var id: String
            var collectionId: String
            var archive: String
        }

        @Test func aDownloadCutByAHaltedServerResumesWithOnlyTheMissingRange() async throws {
            let instance = "download-\(UInt32.random(in: 0...UInt32.max))"
            let url = try await runScript(["Scripts/pocketbase", "start", "--instance", instance, "--seed", "0"])
            do {
                try await haltAndResume(url: url, instance: instance)
            } catch {
                _ = try? await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
                throw error
            }
            _ = try await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
        }

        private func haltAndResume(url: String, instance: String) async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "pb-resume-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let source = directory.appendingPathComponent("archive.bin")
            let size = 24 << 20
            // 64 KB blocks of one pattern, each numbered, so that a byte out of place shows.
            let pattern = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
            var contents = Data(capacity: size)
            for block in 0..<(size / pattern.count) {
                var numbered = pattern
                withUnsafeBytes(of: UInt64(block).littleEndian) { numbered.replaceSubrange(0..<8, with: $0) }
                contents.append(numbered)
            }
            try contents.write(to: source)
            let direct = NetworkSession(
                baseURL: url + "/api/collections", validation: PocketBaseValidation(),
                transport: URLSessionTransport(timeout: .seconds(45)))
            var form = MultipartForm()
            form.append("Archive", name: "title")
            form.append(contentsOf: source, name: "archive")
            let record = try await direct.send(
                Endpoint(.post, "attachments/records", body: .multipart(form)), as: Archived.self)

            // Downloads go through a proxy that passes the first 8 MB and holds the rest: the server is halted
            // while the transfer is at that byte, however fast the machine, and the proxy then drops the
            // connection, as the halted server's would be.
            let port = try #require(URLComponents(string: url)?.port)
            let proxy = try CuttableProxy(to: UInt16(port))
            defer { proxy.stop() }
            proxy.hold(after: 8 << 20)
            let ranges = Locked<[String?]>([])
            let recorder = RequestAdapter { request in
                ranges.withLock { $0.append(request.value(forHTTPHeaderField: "Range")) }
                return request
            }
            let session = NetworkSession(
                baseURL: "http://127.0.0.1:\(proxy.port)", validation: PocketBaseValidation(),
                transport: URLSessionTransport(timeout: .seconds(45)), adapters: [recorder])
            let file = Endpoint(.get, "api/files/\(record.collectionId)/\(record.id)/\(record.archive)")
            let destination = directory.appendingPathComponent("copy.bin")
            let first = Task { try await session.download(file, to: destination) }
            try await proxy.held.wait()
            _ = try await runScript(["Scripts/pocketbase", "halt", "--instance", instance])
            proxy.cut()
            do {
                _ = try await first.value
                Issue.record("the download finished although the server was halted")
            } catch {
                #expect(error is NetworkError)
            }
            #expect(!FileManager.default.fileExists(atPath: destination.path))

            _ = try await runScript(["Scripts/pocketbase", "resume", "--instance", instance])
            proxy.release()
            proxy.restore()
            let resumed = try await session.download(file, to: destination)
            #expect(resumed.statusCode == 206)
            // All the proxy passed but the response's head: a few hundred bytes short of 8 MB.
            #expect((((8 << 20) - 1_000)..<(8 << 20)).contains(resumed.resumedFrom), "\(resumed.resumedFrom)")
            #expect(resumed.byteCount == size)
            #expect(try Data(contentsOf: destination) == contents)
            // The first request asked for the whole file; the second only for what was missing.
            #expect(ranges.withLock { $0 } == [nil, "bytes=\(resumed.resumedFrom)-"])
        }
    }
}
