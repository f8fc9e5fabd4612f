import Foundation

extension InMemoryBackend {
    /// The path at which a file sent with a record is served, in PocketBase's layout:
    /// `/api/files/<collection>/<record id>/<file name>`.
    ///
    /// A create or update whose body is `multipart/form-data` (a `MultipartForm`) stores its
    /// text parts as string fields and its file parts as files served at this path (with ranges and an `ETag`,
    /// as ``serve(_:at:contentType:)`` serves them). The record's field of that name holds the file names, in
    /// order, as an array; an update replaces the files of the fields it sends (those no longer named are served
    /// no more), and a deletion removes the record's files. File names are kept as sent.
    /// - Parameters:
    ///   - collection: The collection's name.
    ///   - recordID: The record's id.
    ///   - fileName: The file's name, as sent.
    /// - Returns: The URL path.
    public static func filePath(collection: String, recordID: String, fileName: String) -> String {
        "/api/files/\(collection)/\(recordID)/\(fileName)"
    }
}

/// A `multipart/form-data` body as the backend reads it.
struct ParsedForm {
    /// The fields a create or update sends, and its files: a JSON object, or a form whose text parts are
    /// string fields and whose files' names fill their fields, in order; `nil` for a body that is neither.
    static func fields(of body: Data, contentType: String?) -> ([String: JSONValue], [File])? {
        let contentType = contentType ?? ""
        guard contentType.lowercased().hasPrefix("multipart/form-data") else {
            return (try? JSONDecoder().decode(JSONValue.self, from: body))?.objectValue.map { ($0, []) }
        }
        guard let form = ParsedForm(body, contentType: contentType) else { return nil }
        var fields = form.fields.mapValues(JSONValue.string)
        for file in form.files {
            var names = fields[file.field]?.arrayValue ?? []
            names.append(.string(file.name))
            fields[file.field] = .array(names)
        }
        return (fields, form.files)
    }

    struct File {
        var field: String
        var name: String
        var contentType: String
        var data: Data
    }

    var fields: [String: String] = [:]
    var files: [File] = []

    /// Parses `body` by the boundary of `contentType`; `nil` when it is not a well-formed form.
    init?(_ body: Data, contentType: String) {
        guard let boundary = Self.parameter("boundary", in: contentType), !boundary.isEmpty else { return nil }
        let delimiter = Data("--\(boundary)".utf8)
        let crlf = Data("\r\n".utf8)
        let blank = Data("\r\n\r\n".utf8)
        guard var cursor = body.range(of: delimiter)?.upperBound else { return nil }
        // Each part: CRLF, its headers, a blank line, its content, CRLF and the next delimiter; `--` ends.
        for _ in 0..<10_000 {
            if body[cursor...].starts(with: Data("--".utf8)) { return }
            guard body[cursor...].starts(with: crlf),
                let headEnd = body.range(of: blank, in: (cursor + 2)..<body.endIndex),
                let next = body.range(of: crlf + delimiter, in: headEnd.upperBound..<body.endIndex)
            else { return nil }
            let head = String(decoding: body[(cursor + 2)..<headEnd.lowerBound], as: UTF8.self)
            let content = Data(body[headEnd.upperBound..<next.lowerBound])
            var disposition = ""
            var type = "application/octet-stream"
            for line in head.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") { disposition = line }
                if lower.hasPrefix("content-type:") {
                    type = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                }
            }
            guard let name = Self.parameter("name", in: disposition) else { return nil }
            if let fileName = Self.parameter("filename", in: disposition) {
                files.append(File(field: name, name: fileName, contentType: type, data: content))
            } else {
                fields[name] = String(decoding: content, as: UTF8.self)
            }
            cursor = next.upperBound
        }
        return nil
    }

    /// A parameter of a header value (`name="photo"` or `boundary=abc`), unquoted; a `;` inside quotes belongs
    /// to the value.
    private static func parameter(_ name: String, in value: String) -> String? {
        var pieces: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == ";", !quoted {
                pieces.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        pieces.append(current)
        for piece in pieces.dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == name else { continue }
            let raw = pair[1].trimmingCharacters(in: .whitespaces)
            return raw.hasPrefix("\"") && raw.hasSuffix("\"") && raw.count >= 2
                ? String(raw.dropFirst().dropLast()) : raw
        }
        return nil
    }
}
