import Foundation
import ResourceKit
import ResourceKitTransfer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A record with files: `/api/collections/attachments/records`.
struct Attachment: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var files: [String]
}

/// What a service gives to attach a file, and the progress it shows.
struct NewAttachment: Sendable {
    var title: String
    var file: URL
    var progress: TransferProgress
}

struct Attachments: Creatable, Listable {
    typealias Value = Attachment
    typealias Item = Attachment
    typealias CreateRequest = NewAttachment
    typealias ListResponse = PageEnvelope<Attachment>
    static let pagination = PageNumberPagination(pageSize: 50)

    static func createEndpoint(for request: NewAttachment) -> Endpoint {
        var form = MultipartForm()
        form.append(request.title, name: "title")
        form.append(contentsOf: request.file, name: "files", contentType: "text/plain")
        var endpoint = Endpoint(.post, "attachments/records", body: .multipart(form))
        endpoint.uploadProgress = request.progress
        return endpoint
    }

    static func listEndpoint(for request: Void) -> Endpoint {
        Endpoint(.get, "attachments/records")
    }
}

/// Where the server serves the files of records: its origin, `http://host:port`.
nonisolated(unsafe) var filesOrigin: String?

func attach(_ session: NetworkSession) async throws {
    print("\n6. Attaching a file to a record, listing it, downloading it back")
    guard let filesOrigin else {
        print("  skipped: no server to send files to")
        return
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("example-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let original = Data((0..<300_000).map { UInt8(ascii: "a") + UInt8($0 % 26) })
    let file = directory.appendingPathComponent("trip-notes.txt")
    try original.write(to: file)

    let upload = TransferProgress()
    let record = Resource<Attachments>(session: session)
    do {
        try await record.create(NewAttachment(title: "Trip notes", file: file, progress: upload))
    } catch {
        guard error.serverError?.status == 404 else { throw error }
        print("  skipped: the server has no attachments collection (Scripts/pocketbase creates one)")
        return
    }
    guard let created = record.value, let name = created.files.first else {
        throw ExampleError("the record came back without its file")
    }
    print("  uploaded from disk, streamed: \(upload.status) (the file and the form around it)")

    let list = ListResource<Attachments>(session: session, request: ())
    try await list.loadAll()
    let listed = list.items.first { $0.id == created.id }
    print("  listed: \(listed.map { "\"\($0.title)\" with \($0.files.count) file" } ?? "missing")")

    let copy = directory.appendingPathComponent("downloaded.txt")
    let download = TransferProgress()
    let url = "\(filesOrigin)/api/files/attachments/\(created.id)/\(name)"
    _ = try await session.download(Endpoint(.get, url), to: copy, progress: download)
    print("  downloaded: \(download.status)")
    print("  the bytes match the original: \(try Data(contentsOf: copy) == original ? "yes" : "no")")
}
