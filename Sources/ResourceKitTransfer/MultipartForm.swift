public import Foundation
public import ResourceKitHTTP

/// A `multipart/form-data` body (RFC 7578): text fields and files, in order. Send it as
/// ``ResourceKitHTTP/RequestBody/multipart(_:)``.
///
/// ```swift
/// var form = MultipartForm()
/// form.append("Holiday", name: "title")
/// form.append(photo, name: "attachment", fileName: "beach.jpg", contentType: "image/jpeg")
/// let endpoint = Endpoint(.post, "posts", body: .multipart(form))
/// ```
///
/// Names, file names and content types go into part headers, so a carriage return, a line feed or a double
/// quote in one would break the body apart: sending such a form fails with `NetworkError.encoding(_:)`
/// naming the field, before any request. Names and file names are otherwise sent as they are, in UTF-8.
///
/// A form of text and `Data` parts is encoded in memory when the request is built. A form with a file
/// appended by URL (``append(contentsOf:name:fileName:contentType:)``) is streamed instead: the session sends
/// it piece by piece, reading each file from disk a buffer at a time as the transport sends it, so a 1 GB
/// video costs no memory. Such a body is sent without a `Content-Length` (with `Transfer-Encoding: chunked`
/// on Linux) and is read again from the files for a retry or a `307`/`308`.
public struct MultipartForm: Sendable, Equatable, ComposedBody {
    /// What a part holds.
    enum Content: Sendable, Equatable {
        case bytes(Data)
        case file(URL)
    }

    /// One part.
    struct Part: Sendable, Equatable {
        var name: String
        var fileName: String?
        var contentType: String?
        var content: Content
    }

    /// The boundary between parts: random unless given.
    public let boundary: String
    private(set) var parts: [Part] = []

    /// Creates an empty form.
    /// - Parameter boundary: The boundary between parts; a random one by default. It must not occur in any
    ///   part: one that does fails the request with `NetworkError.encoding(_:)`.
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? "ResourceKit-" + UUID().uuidString
    }

    /// The `Content-Type` of the body, with its boundary, quoted when it holds a character a header token may
    /// not (a space, `(`, `)`, `,`, `/`, `:`, `=`, `?`), as RFC 2045 asks.
    public var contentType: String {
        let plain = boundary.utf8.allSatisfy { byte in
            !(byte == UInt8(ascii: " ") || Array("(),/:=?".utf8).contains(byte))
        }
        return "multipart/form-data; boundary=" + (plain ? boundary : "\"\(boundary)\"")
    }

    /// Appends a text field.
    /// - Parameters:
    ///   - value: The text, sent as UTF-8.
    ///   - name: The field's name.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(name: name, fileName: nil, contentType: nil, content: .bytes(Data(value.utf8))))
    }

    /// Appends a file.
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - name: The field's name.
    ///   - fileName: The file name the server sees.
    ///   - contentType: The file's media type.
    public mutating func append(
        _ data: Data, name: String, fileName: String, contentType: String = "application/octet-stream"
    ) {
        parts.append(Part(name: name, fileName: fileName, contentType: contentType, content: .bytes(data)))
    }

    /// Appends a file read from disk when the form is sent, never whole into memory.
    ///
    /// The file is checked when the request is built: a URL that is not a file URL, or a file that is
    /// missing, not a regular file or not readable, fails the request with `NetworkError.file(_:)` before
    /// anything is sent. It is read as the transport sends it, so it should not change until the call ends.
    /// - Parameters:
    ///   - fileURL: The file.
    ///   - name: The field's name.
    ///   - fileName: The file name the server sees; the URL's last path component by default.
    ///   - contentType: The file's media type.
    public mutating func append(
        contentsOf fileURL: URL, name: String, fileName: String? = nil,
        contentType: String = "application/octet-stream"
    ) {
        parts.append(
            Part(
                name: name, fileName: fileName ?? fileURL.lastPathComponent, contentType: contentType,
                content: .file(fileURL)))
    }

    /// Whether a part is a file read from disk, so that the form is streamed.
    package var streams: Bool {
        parts.contains { if case .file = $0.content { return true } else { return false } }
    }

    /// The body's bytes, in memory: files appended by URL are read whole (the session streams them instead
    /// when it sends the form).
    /// - Throws: `NetworkError.encoding(_:)` for a name, file name or content type with a carriage return,
    ///   a line feed or a double quote, an empty boundary or one with characters RFC 2046 does not allow, or
    ///   a boundary that occurs in a part; `NetworkError.file(_:)` for a file that cannot be read.
    public func encoded() throws(NetworkError) -> Data {
        var body = Data()
        for piece in try pieces() {
            switch piece {
            case .bytes(let data):
                body.append(data)
            case .file(let url, _, _):
                let data: Data
                do {
                    data = try Data(contentsOf: url)
                } catch {
                    throw .file("cannot read \(url.path): \(error.localizedDescription)")
                }
                if data.range(of: Data("--\(boundary)".utf8)) != nil {
                    throw .encoding("the boundary \(boundary) occurs in the file \(url.lastPathComponent)")
                }
                body.append(data)
            }
        }
        return body
    }

    /// The body as the pieces of a streamed upload: each part's head, its bytes or its file, the closing
    /// delimiter. In-memory parts are checked for the boundary now; files as they are read.
    package func pieces() throws(NetworkError) -> [UploadPiece] {
        try Self.check(boundary: boundary)
        let delimiter = Data("--\(boundary)".utf8)
        var pieces: [UploadPiece] = []
        var pending = Data()
        for part in parts {
            try Self.check(part.name, "the field name")
            if let fileName = part.fileName { try Self.check(fileName, "the file name of field \(part.name)") }
            if let contentType = part.contentType { try Self.check(contentType, "the content type of \(part.name)") }
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let fileName = part.fileName { head += "; filename=\"\(fileName)\"" }
            head += "\r\n"
            if let contentType = part.contentType { head += "Content-Type: \(contentType)\r\n" }
            head += "\r\n"
            pending.append(Data(head.utf8))
            switch part.content {
            case .bytes(let data):
                if data.range(of: delimiter) != nil {
                    throw .encoding("the boundary \(boundary) occurs in the field \(part.name)")
                }
                pending.append(data)
            case .file(let url):
                let size = try UploadPiece.size(ofFileAt: url)
                pieces.append(.bytes(pending))
                pending = Data()
                pieces.append(.file(url, size: size, delimiter: delimiter))
            }
            pending.append(Data("\r\n".utf8))
        }
        pending.append(Data("--\(boundary)--\r\n".utf8))
        pieces.append(.bytes(pending))
        return pieces
    }

    private static func check(_ text: String, _ what: String) throws(NetworkError) {
        if text.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == UInt8(ascii: "\"") }) {
            throw .encoding("\(what) (\(text.debugDescription)) has a carriage return, a line feed or a quote")
        }
    }

    /// RFC 2046 §5.1.1: 1 to 70 characters of a set, not ending with a space.
    private static func check(boundary: String) throws(NetworkError) {
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ")
        guard (1...70).contains(boundary.count), boundary.allSatisfy(allowed.contains), boundary.last != " " else {
            throw .encoding("the boundary \(boundary.debugDescription) is not a valid multipart boundary")
        }
    }
}

extension RequestBody {
    /// A `multipart/form-data` body: encoded when the request is built, or streamed from disk when it holds
    /// a file appended by URL (see ``MultipartForm``).
    /// - Parameter form: The form.
    public static func multipart(_ form: MultipartForm) -> RequestBody { RequestBody(composed: form) }
}

extension MultipartForm {
    package func isEqual(to other: any ComposedBody) -> Bool { (other as? MultipartForm) == self }
}
