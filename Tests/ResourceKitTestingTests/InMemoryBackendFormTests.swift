import Foundation
import ResourceKit
import ResourceKitPocketBase
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Records created and updated with `multipart/form-data` forms: text parts become fields, files are served.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendFormTests {
    struct Attachment: Codable, Sendable, Equatable {
        var id: String
        var title: String
        var files: [String]
    }

    func setUp() -> (InMemoryBackend, NetworkSession) {
        let backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
        backend.addCollection("attachments", requiredFields: ["title"])
        let session = NetworkSession(
            baseURL: "http://backend.local/api/collections", validation: PocketBaseValidation(), transport: backend)
        return (backend, session)
    }

    func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("form-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func aFormCreatesARecordAndItsFilesAreServed() async throws {
        let (backend, session) = setUp()
        var form = MultipartForm()
        form.append("Holiday", name: "title")
        form.append(contentsOf: try file("first"), name: "files", fileName: "a.txt", contentType: "text/plain")
        form.append(Data([0, 1, 2]), name: "files", fileName: "b.bin")
        let created: Attachment = try await session.send(
            Endpoint(.post, "attachments/records", body: .multipart(form)))
        #expect(created.title == "Holiday")
        #expect(created.files == ["a.txt", "b.bin"])
        let path = InMemoryBackend.filePath(collection: "attachments", recordID: created.id, fileName: "a.txt")
        #expect(path == "/api/files/attachments/\(created.id)/a.txt")
        let first = try await session.response(for: Endpoint(.get, "http://backend.local" + path))
        #expect(first.body == Data("first".utf8))
        #expect(first.headers["Content-Type"] == "text/plain")
        let second = try await session.data(
            for: Endpoint(
                .get,
                "http://backend.local"
                    + InMemoryBackend.filePath(collection: "attachments", recordID: created.id, fileName: "b.bin")))
        #expect(second == Data([0, 1, 2]))
        // The record reads back with its file names.
        let read: Attachment = try await session.send(Endpoint(.get, "attachments/records").appending(id: created.id))
        #expect(read == created)
        // An update replaces the files of the field it sends.
        var update = MultipartForm()
        update.append(Data("new".utf8), name: "files", fileName: "c.txt", contentType: "text/plain")
        let updated: Attachment = try await session.send(
            Endpoint(.patch, "attachments/records", body: .multipart(update)).appending(id: created.id))
        #expect(updated.files == ["c.txt"])
        #expect(updated.title == "Holiday")
        #expect(backend.requestLog.last?.body == (try update.encoded()))
        // The replaced files are served no more; the new one is.
        await #expect(throws: NetworkError.self) {
            try await session.data(for: Endpoint(.get, "http://backend.local" + path))
        }
        let third = InMemoryBackend.filePath(collection: "attachments", recordID: created.id, fileName: "c.txt")
        #expect(try await session.data(for: Endpoint(.get, "http://backend.local" + third)) == Data("new".utf8))
        // A deleted record's files go with it.
        try await session.send(Endpoint(.delete, "attachments/records").appending(id: created.id))
        await #expect(throws: NetworkError.self) {
            try await session.data(for: Endpoint(.get, "http://backend.local" + third))
        }
    }

    /// A file the record no longer names is served no more, however the update stops naming it: an empty array,
    /// a text part, or a replacement that leaves the field out.
    @Test(arguments: ["empty array", "text part", "replacement"])
    func aFileNoLongerNamedIsServedNoMore(update: String) async throws {
        let (_, session) = setUp()
        var form = MultipartForm()
        form.append("Holiday", name: "title")
        form.append(Data("first".utf8), name: "files", fileName: "a.txt", contentType: "text/plain")
        let created: Attachment = try await session.send(Endpoint(.post, "attachments/records", body: .multipart(form)))
        let url =
            "http://backend.local"
            + InMemoryBackend.filePath(
                collection: "attachments", recordID: created.id, fileName: "a.txt")
        #expect(try await session.data(for: Endpoint(.get, url)) == Data("first".utf8))
        let endpoint: Endpoint
        switch update {
        case "empty array":
            endpoint = Endpoint(.patch, "attachments/records", body: .json(["files": [String]()]))
        case "text part":
            var text = MultipartForm()
            text.append("", name: "files")
            endpoint = Endpoint(.patch, "attachments/records", body: .multipart(text))
        default:
            endpoint = Endpoint(.put, "attachments/records", body: .json(["title": "Replaced"]))
        }
        _ = try await session.data(for: endpoint.appending(id: created.id))
        await #expect(throws: NetworkError.self) { try await session.data(for: Endpoint(.get, url)) }
    }

    @Test func aFileNameWithASemicolonIsReadWhole() async throws {
        let (_, session) = setUp()
        var form = MultipartForm()
        form.append("Semicolons", name: "title")
        form.append(Data("x".utf8), name: "files", fileName: "a;b.txt")
        let created: Attachment = try await session.send(
            Endpoint(.post, "attachments/records", body: .multipart(form)))
        #expect(created.files == ["a;b.txt"])
    }

    @Test func aFormMissingARequiredFieldIsRefusedAsPocketBaseWould() async throws {
        let (_, session) = setUp()
        var form = MultipartForm()
        form.append(Data("x".utf8), name: "files", fileName: "a.txt")
        do {
            try await session.send(Endpoint(.post, "attachments/records", body: .multipart(form)))
            Issue.record("a form without a title was accepted")
        } catch {
            #expect(error.serverError?.fieldErrors.keys.sorted() == ["title"])
        }
    }

    @Test(arguments: [
        "no boundary here", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nunterminated",
        "--b\r\nno blank line", "--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
    ])
    func aMalformedFormIsABadRequest(body: String) async throws {
        let (_, session) = setUp()
        do {
            try await session.send(
                Endpoint(
                    .post, "attachments/records",
                    body: .data(Data(body.utf8), contentType: "multipart/form-data; boundary=b")))
            Issue.record("a malformed form was accepted")
        } catch {
            #expect(error.serverError?.status == 400)
        }
    }
}
