public import Foundation
public import ResourceKitHTTP

/// A body downloaded to a file: what ``ResourceKitHTTP/NetworkSession/download(_:to:progress:)`` returns.
public struct DownloadedFile: Sendable, Equatable {
    /// The file: the destination you gave.
    public var url: URL
    /// The status of the response that completed it: `200`, `206` for a resumed download, or `416` when the
    /// partial file already held the whole body (the server's `Content-Range` total equals its size).
    public var statusCode: Int
    /// That response's headers.
    public var headers: HTTPHeaders
    /// The file's size.
    public var byteCount: Int
    /// How many bytes an earlier, interrupted download had left that this one kept; 0 when it started over.
    public var resumedFrom: Int
}

extension NetworkSession {
    /// Downloads the endpoint's response body to `destination`, resuming an interrupted download of it.
    ///
    /// The body is written as it arrives to a partial file beside the destination (`.<name>.partial`), which
    /// takes the destination's name, replacing any file there, only once complete and flushed to disk: the
    /// destination never holds a partial body. When a download fails midway and the response named a
    /// validator (a strong `ETag`, or `Last-Modified`), the partial file and the validator stay, and the next
    /// download of the same endpoint (method and path: a query may hold a presigned URL's changing signature)
    /// to the same destination asks only for the rest
    /// (`Range`, with `If-Range`): a `206` continues the file; a `200` (the resource changed, or the server
    /// ignores ranges), or a `206` whose `ETag` is not the partial file's, starts it over. A download of another
    /// endpoint to the destination drops the partial file. Without a validator nothing is resumed, and a
    /// failed download leaves no partial file. Run one download per destination at a time.
    ///
    /// The request asks for `Accept-Encoding: identity` unless the endpoint sets its own; a body compressed
    /// anyway is saved decoded, not checked against its length, and not resumed. A status outside `2xx` is
    /// never saved as the file, even when the validation provider accepts it.
    ///
    /// A streamed request: the time limit ends when the head arrives (see `bytes(_:)`).
    /// - Parameters:
    ///   - endpoint: What to download.
    ///   - destination: A file URL in an existing directory.
    ///   - progress: Where to report the bytes written; see ``TransferProgress``.
    /// - Returns: The downloaded file.
    /// - Throws: `NetworkError.file(_:)` when the destination is not a file URL in an existing directory,
    ///   or a write fails (the disk is full); `NetworkError.invalidResponse(_:)` when the body is shorter
    ///   than announced, or a `206` does not continue the partial file;
    ///   `NetworkError.httpStatus(code:body:headers:)` for a status outside `2xx`; or the request's error.
    public nonisolated func download(
        _ endpoint: Endpoint,
        to destination: URL,
        progress: TransferProgress? = nil
    ) async throws(NetworkError) -> DownloadedFile {
        do throws(NetworkError) {
            let files = try DownloadFiles(destination)
            let file = try await download(endpoint, files: files, progress: progress, resuming: true)
            progress?.finish()
            return file
        } catch {
            progress?.finish()
            throw error
        }
    }

    private nonisolated func download(
        _ endpoint: Endpoint,
        files: DownloadFiles,
        progress: TransferProgress?,
        resuming: Bool
    ) async throws(NetworkError) -> DownloadedFile {
        var request = endpoint
        // The bytes as the server keeps them: offsets and lengths of a compressed body would count other bytes
        // than the file's.
        if request.headers["Accept-Encoding"] == nil { request.headers["Accept-Encoding"] = "identity" }
        let identity = DownloadFiles.identity(of: endpoint)
        let resume = resuming ? files.resumePoint(for: identity) : nil
        if let resume {
            request.headers["Range"] = "bytes=\(resume.offset)-"
            request.headers["If-Range"] = resume.validator
        }
        // Asked for more than there is: the partial file may hold it all; otherwise start over. Whether the
        // validation provider rejected the `416` or let it through.
        func rangeNotSatisfiable(
            _ headers: HTTPHeaders?, resume: (offset: Int64, validator: String)
        ) async throws(NetworkError) -> DownloadedFile {
            if let total = ContentRange.total(in: headers?["Content-Range"]), total == resume.offset {
                progress?.start(completed: total, expected: total)
                // Bytes an earlier attempt wrote and did not sync: on disk before the name is the destination's.
                try files.syncPartial()
                try files.complete()
                return DownloadedFile(
                    url: files.destination, statusCode: 416, headers: headers ?? HTTPHeaders(),
                    byteCount: Int(clamping: resume.offset), resumedFrom: Int(clamping: resume.offset))
            }
            return try await download(endpoint, files: files, progress: progress, resuming: false)
        }
        let response: StreamedResponse
        do {
            response = try await bytes(request)
        } catch {
            guard let resume, error.statusCode == 416 else { throw error }
            return try await rangeNotSatisfiable(error.headers, resume: resume)
        }
        if response.statusCode == 416, let resume {
            response.body.cancel()
            return try await rangeNotSatisfiable(response.headers, resume: resume)
        }
        // A status the validation provider let through is still not the file. Its body is in memory already: the
        // session reads the body of a response that is not a success (its first megabyte) before it returns.
        guard (200..<300).contains(response.statusCode) else {
            let body = (try? await response.body.collect(upTo: .max)) ?? Data()
            throw .httpStatus(code: response.statusCode, body: body, headers: response.headers)
        }
        // Counted in 64 bits: a file may be larger than a 32-bit `Int` (watchOS devices) counts.
        var offset: Int64 = 0
        var total = response.headers["Content-Length"].flatMap(Int64.init).flatMap { $0 >= 0 ? $0 : nil }
        // A body the server compressed anyway is not counted by its length, and cannot be resumed by offset.
        let encoded = response.headers["Content-Encoding"].map { $0.lowercased() != "identity" } ?? false
        if encoded { total = nil }
        // A compressed continuation counts other bytes than the file's: start over, asking for the whole.
        if encoded, response.statusCode == 206, resume != nil {
            response.body.cancel()
            files.discard()
            return try await download(endpoint, files: files, progress: progress, resuming: false)
        }
        if response.statusCode == 206, let resume {
            guard let range = ContentRange(response.headers["Content-Range"]), range.start == resume.offset else {
                response.body.cancel()
                files.discard()
                throw .invalidResponse("a 206 that does not continue the partial download")
            }
            // A server that ignores `If-Range` answers with the rest of another version: start over.
            if resume.validator.hasPrefix("\""), let tag = response.headers["ETag"],
                DownloadFiles.entityTag(tag) != resume.validator
            {
                response.body.cancel()
                files.discard()
                return try await download(endpoint, files: files, progress: progress, resuming: false)
            }
            offset = resume.offset
            // A length past what 64 bits hold with the offset is no length (the total stays unknown).
            total =
                range.total
                ?? response.headers["Content-Length"].flatMap(Int64.init).flatMap { length in
                    let (sum, overflow) = length.addingReportingOverflow(offset)
                    return length >= 0 && !overflow ? sum : nil
                }
        }
        let writer = try files.open(keeping: offset)
        let validator = encoded ? nil : DownloadFiles.validator(in: response.headers)
        do throws(NetworkError) {
            try files.remember(validator, for: identity)
        } catch {
            response.body.cancel()
            writer.close()
            files.discard()
            throw error
        }
        progress?.start(completed: offset, expected: total)
        var written = offset
        do throws(NetworkError) {
            // A loop that falls behind the network gets what waits in one piece (up to 256 KB): one write.
            for try await chunk in response.body {
                try writer.write(chunk)
                written += Int64(chunk.count)
                progress?.advance(by: chunk.count)
            }
        } catch {
            response.body.cancel()
            writer.close()
            // Kept only for a resume, which needs a validator.
            if validator == nil { files.discard() }
            throw error
        }
        if let total, written != total {
            writer.close()
            if validator == nil { files.discard() }
            throw .invalidResponse("the body ended after \(written) of the \(total) bytes announced")
        }
        do throws(NetworkError) {
            try writer.finish()
            try files.complete()
        } catch {
            // Not synced or not renamed: kept only for a resume, as after any failure.
            if validator == nil { files.discard() }
            throw error
        }
        return DownloadedFile(
            url: files.destination, statusCode: response.statusCode, headers: response.headers,
            byteCount: Int(clamping: written), resumedFrom: Int(clamping: offset))
    }
}

/// `Content-Range: bytes 100-199/1000` (or `bytes */1000` on a `416`).
struct ContentRange {
    var start: Int64
    var total: Int64?

    init?(_ text: String?) {
        guard let text, text.hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard let range = parts.first, let dash = range.firstIndex(of: "-"), let start = Int64(range[..<dash]),
            start >= 0
        else { return nil }
        self.start = start
        self.total = parts.count == 2 ? Int64(parts[1]).flatMap { $0 >= 0 ? $0 : nil } : nil
    }

    /// The total of `bytes */1000`.
    static func total(in text: String?) -> Int64? {
        guard let text, text.hasPrefix("bytes */") else { return nil }
        return Int64(text.dropFirst("bytes */".count)).flatMap { $0 >= 0 ? $0 : nil }
    }
}

/// A download's destination, its partial file and the partial file's validator.
struct DownloadFiles: Sendable {
    let destination: URL
    let partial: URL
    let validatorFile: URL

    init(_ destination: URL) throws(NetworkError) {
        guard destination.isFileURL, !destination.lastPathComponent.isEmpty, destination.lastPathComponent != "/"
        else { throw .file("the destination \(destination) is not a file URL") }
        let directory = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw .file("the directory \(directory.path) does not exist") }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: destination.path, isDirectory: &isFolder), isFolder.boolValue {
            throw .file("the destination \(destination.path) is a directory")
        }
        self.destination = destination
        self.partial = directory.appendingPathComponent("." + destination.lastPathComponent + ".partial")
        self.validatorFile = directory.appendingPathComponent(
            "." + destination.lastPathComponent + ".partial-validator")
    }

    /// What names a download's resource: a partial file is resumed only by a download of the same. Its query is
    /// not part of it: a presigned URL's signature changes from one request to the next.
    static func identity(of endpoint: Endpoint) -> String {
        // An absolute URL carries its query (and fragment) in its path: they are left out as well.
        let path =
            endpoint.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? $0 } ?? ""
        return "\(endpoint.method.rawValue) \(path)"
    }

    /// Where an interrupted download of `identity` stopped, and the validator its response named; `nil` when
    /// there is none, or it was of another resource (then it is dropped).
    func resumePoint(for identity: String) -> (offset: Int64, validator: String)? {
        guard let data = FileManager.default.contents(atPath: validatorFile.path),
            let text = String(data: data, encoding: .utf8), let newline = text.firstIndex(of: "\n")
        else { return nil }
        let validator = String(text[..<newline])
        guard String(text[text.index(after: newline)...]) == identity else {
            discard()
            return nil
        }
        guard !validator.isEmpty, let attributes = try? FileManager.default.attributesOfItem(atPath: partial.path),
            let size = (attributes[.size] as? NSNumber)?.int64Value, size > 0
        else { return nil }
        return (size, validator)
    }

    /// A strong `ETag`, else `Last-Modified`: what `If-Range` may name. A tag a server sends without its quotes
    /// is quoted, as RFC 9110 writes it: so it is told apart from a date, and compared on a `206`.
    static func validator(in headers: HTTPHeaders) -> String? {
        if let tag = headers["ETag"].flatMap(entityTag) { return tag }
        return headers["Last-Modified"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A strong entity tag in quotes, or `nil` for none or a weak one.
    static func entityTag(_ value: String) -> String? {
        let tag = value.trimmingCharacters(in: .whitespaces)
        guard !tag.isEmpty, !tag.hasPrefix("W/") else { return nil }
        return tag.hasPrefix("\"") ? tag : "\"" + tag + "\""
    }

    /// Keeps the validator for a resume of `identity`, or forgets it when there is none.
    func remember(_ validator: String?, for identity: String) throws(NetworkError) {
        guard let validator else {
            try? FileManager.default.removeItem(at: validatorFile)
            return
        }
        do {
            try Data((validator + "\n" + identity).utf8).write(to: validatorFile, options: .atomic)
        } catch {
            throw .file("could not write \(validatorFile.path): \(error.localizedDescription)")
        }
    }

    /// The partial file, open for writing after its first `offset` bytes (all of it emptied when 0).
    func open(keeping offset: Int64) throws(NetworkError) -> PartialFile {
        let descriptor = partial.path.withCString(openForWriting)
        guard descriptor >= 0 else {
            throw .file("could not open \(partial.path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            // A device (a test's /dev/full) cannot be truncated; a file can.
            if ftruncate(descriptor, off_t(offset)) != 0, offset > 0 {
                throw NetworkError.file("could not truncate \(partial.path): \(String(cString: strerror(errno)))")
            }
            try handle.seek(toOffset: UInt64(offset))
        } catch {
            try? handle.close()
            throw .file("could not open \(partial.path): \(error)")
        }
        return PartialFile(handle: handle, path: partial.path, offset: offset)
    }

    /// The partial file takes the destination's name; the validator goes.
    func complete() throws(NetworkError) {
        guard rename(partial.path, destination.path) == 0 else {
            throw .file("could not move the download to \(destination.path): \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(at: validatorFile)
    }

    /// Flushes the partial file to disk.
    func syncPartial() throws(NetworkError) {
        do {
            let handle = try FileHandle(forUpdating: partial)
            defer { try? handle.close() }
            try handle.synchronize()
        } catch {
            throw .file("could not flush \(partial.path): \(error.localizedDescription)")
        }
    }

    /// Forgets the partial download.
    func discard() {
        try? FileManager.default.removeItem(at: partial)
        try? FileManager.default.removeItem(at: validatorFile)
    }
}

/// `open(2)` for writing, creating the file: at file scope, where `open` is the C library's (inside a type with an
/// `open` method of its own, the name would be that method).
private func openForWriting(_ path: UnsafePointer<CChar>) -> Int32 {
    open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
}
