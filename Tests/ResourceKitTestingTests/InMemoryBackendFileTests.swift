import Foundation
import ResourceKit
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Files served by the in-memory backend: whole, by range, and downloads cut and resumed offline.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendFileTests {
    let backend = InMemoryBackend()
    var session: NetworkSession { NetworkSession(baseURL: "http://backend.local", transport: backend) }
    let report = Data((0..<1000).map { UInt8($0 % 251) })

    func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func get(_ path: String, headers: HTTPHeaders = [:], method: HTTPMethod = .get) async throws -> HTTPResponse {
        var request = URLRequest(url: try #require(URL(string: "http://backend.local\(path)")))
        request.httpMethod = method.rawValue
        for field in headers { request.setValue(field.value, forHTTPHeaderField: field.name) }
        return try await backend.send(request)
    }

    @Test func aFileIsServedWholeWithItsTagAndRanges() async throws {
        backend.serve(report, at: "/files/report.bin", contentType: "application/pdf")
        let whole = try await get("/files/report.bin")
        #expect(whole.statusCode == 200)
        #expect(whole.body == report)
        #expect(whole.headers["Content-Type"] == "application/pdf")
        #expect(whole.headers["Accept-Ranges"] == "bytes")
        #expect(whole.headers["Content-Length"] == "1000")
        let tag = try #require(whole.headers["ETag"])

        let part = try await get("/files/report.bin", headers: ["Range": "bytes=100-199", "If-Range": tag])
        #expect(part.statusCode == 206)
        #expect(part.body == report.subdata(in: 100..<200))
        #expect(part.headers["Content-Range"] == "bytes 100-199/1000")

        let rest = try await get("/files/report.bin", headers: ["Range": "bytes=990-"])
        #expect(rest.body == report.subdata(in: 990..<1000))
        #expect(rest.headers["Content-Range"] == "bytes 990-999/1000")

        // Another tag: the whole file. Past the end: 416, with the size.
        let stale = try await get("/files/report.bin", headers: ["Range": "bytes=100-", "If-Range": "\"old\""])
        #expect(stale.statusCode == 200)
        #expect(stale.body == report)
        let beyond = try await get("/files/report.bin", headers: ["Range": "bytes=1000-"])
        #expect(beyond.statusCode == 416)
        #expect(beyond.headers["Content-Range"] == "bytes */1000")

        // Ranges it does not serve are ignored, as a server may.
        for range in ["bytes=-100", "bytes=1-2,5-6", "items=1-2", "bytes=9-3"] {
            #expect(try await get("/files/report.bin", headers: ["Range": range]).statusCode == 200, "\(range)")
        }
        let head = try await get("/files/report.bin", method: .head)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "1000")
        #expect(try await get("/files/report.bin", method: .post).statusCode == 405)
        backend.removeFile(at: "/files/report.bin")
        #expect(try await get("/files/report.bin").statusCode == 404)
    }

    @Test func aDownloadCutOfflineResumesWithTheRest() async throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("report.bin")
        backend.serve(report, at: "/files/report.bin")
        backend.injectFault(.truncatedBody)
        do {
            _ = try await session.download(Endpoint(.get, "files/report.bin"), to: destination)
            Issue.record("a truncated body was accepted")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let file = try await session.download(Endpoint(.get, "files/report.bin"), to: destination)
        #expect(file.statusCode == 206)
        #expect(file.resumedFrom == 500)
        #expect(try Data(contentsOf: destination) == report)
        let last = try #require(backend.requestLog.last)
        #expect(last.headers["Range"] == "bytes=500-")
        #expect(last.headers["If-Range"] != nil)
    }

    @Test func aFileThatChangedMeanwhileIsDownloadedAfresh() async throws {
        let folder = try directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("report.bin")
        backend.serve(report, at: "/files/report.bin")
        backend.injectFault(.truncatedBody)
        _ = try? await session.download(Endpoint(.get, "files/report.bin"), to: destination)
        let revised = Data(report.reversed())
        backend.serve(revised, at: "/files/report.bin")
        let file = try await session.download(Endpoint(.get, "files/report.bin"), to: destination)
        #expect(file.statusCode == 200)
        #expect(file.resumedFrom == 0)
        #expect(try Data(contentsOf: destination) == revised)
    }
}
