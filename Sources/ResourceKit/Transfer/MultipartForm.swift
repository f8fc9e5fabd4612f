public import Foundation

/// A `multipart/form-data` body (RFC 7578): text fields and files, in order. Send it as
/// ``RequestBody/multipart(_:)``.
///
/// ```swift
/// var form = MultipartForm()
/// form.append("Holiday", name: "title")
/// form.append(photo, name: "attachment", fileName: "beach.jpg", contentType: "image/jpeg")
/// let endpoint = Endpoint(.post, "posts", body: .multipart(form))
/// ```
///
/// Names, file names and content types go into part headers, so a carriage return, a line feed or a double
/// quote in one would break the body apart: sending such a form fails with ``NetworkError/encoding(_:)``
/// naming the field, before any request. Names and file names are otherwise sent as they are, in UTF-8.
/// The form is encoded in memory when the request is built.
public struct MultipartForm: Sendable, Equatable {
    /// One part.
    struct Part: Sendable, Equatable {
        var name: String
        var fileName: String?
        var contentType: String?
        var data: Data
    }

    /// The boundary between parts: random unless given.
    public let boundary: String
    private(set) var parts: [Part] = []

    /// Creates an empty form.
    /// - Parameter boundary: The boundary between parts; a random one by default. It must not occur in any
    ///   part: one that does fails the request with ``NetworkError/encoding(_:)``.
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? "ResourceKit-" + UUID().uuidString
    }

    /// The `Content-Type` of the body, with its boundary.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Appends a text field.
    /// - Parameters:
    ///   - value: The text, sent as UTF-8.
    ///   - name: The field's name.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(name: name, fileName: nil, contentType: nil, data: Data(value.utf8)))
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
        parts.append(Part(name: name, fileName: fileName, contentType: contentType, data: data))
    }

    /// The body's bytes.
    /// - Throws: ``NetworkError/encoding(_:)`` for a name, file name or content type with a carriage return,
    ///   a line feed or a double quote, an empty boundary or one with characters RFC 2046 does not allow, or
    ///   a boundary that occurs in a part.
    public func encoded() throws(NetworkError) -> Data {
        try Self.check(boundary: boundary)
        let delimiter = Data("--\(boundary)".utf8)
        var body = Data()
        for part in parts {
            try Self.check(part.name, "the field name")
            if let fileName = part.fileName { try Self.check(fileName, "the file name of field \(part.name)") }
            if let contentType = part.contentType { try Self.check(contentType, "the content type of \(part.name)") }
            if part.data.range(of: delimiter) != nil {
                throw .encoding("the boundary \(boundary) occurs in the field \(part.name)")
            }
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let fileName = part.fileName { head += "; filename=\"\(fileName)\"" }
            head += "\r\n"
            if let contentType = part.contentType { head += "Content-Type: \(contentType)\r\n" }
            head += "\r\n"
            body.append(Data(head.utf8))
            body.append(part.data)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return body
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
    /// A `multipart/form-data` body, encoded when the request is built.
    /// - Parameter form: The form.
    public static func multipart(_ form: MultipartForm) -> RequestBody { RequestBody(kind: .multipart(form)) }
}
