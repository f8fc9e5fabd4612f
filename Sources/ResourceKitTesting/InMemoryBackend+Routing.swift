public import ResourceKit
import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension InMemoryBackend {
    /// Answers a request like a REST server would. Never throws for a bad request: it answers `4xx`.
    public func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        guard state.withLock({ $0.isReachable }) else {
            throw .transport(code: .notConnectedToInternet, message: "the in-memory backend is unreachable")
        }
        // A streamed body (a file, a form with files) is read here, so that the routes and the log see its bytes;
        // an unreachable backend reads none of it.
        let request = try request.readingBodyStream()
        let parsed = ParsedRequest(request)
        let (fault, latency) = state.withLock { state in
            state.log.append(parsed.recorded)
            return (state.takeFault(), state.latency)
        }
        Changes.raise()
        // Each at most 10⁹ s, as every wait of the kit: two extreme ones must not overflow their sum.
        var delay = min(latency, RealTimeLimit.longest)
        if case .slowBody(let extra) = fault { delay += min(max(extra, .zero), RealTimeLimit.longest) }
        if delay > .zero { try await wait(delay, timeout: request.timeoutInterval) }
        if Task.isCancelled { throw .cancelled }

        switch fault {
        case .status(let code):
            return Self.error(code, "Injected failure.", url: request.url)
        case .dropConnection:
            throw .transport(code: .networkConnectionLost, message: "the server closed the connection before answering")
        default:
            break
        }
        // A faulty server sends its broken body whatever the request asked: a 304 would hide the fault.
        let honoursConditions: Bool
        switch fault {
        case .malformedBody, .truncatedBody: honoursConditions = false
        default: honoursConditions = true
        }
        var (response, changes) = state.withLock { state -> (HTTPResponse, [RealtimeChange]) in
            if let realtime = answerRealtime(parsed, in: &state) { return (realtime, []) }
            // A write repeated with the same `Idempotency-Key` gets the first answer, and changes nothing.
            let key = parsed.method == .get ? nil : parsed.recorded.headers["Idempotency-Key"]
            if let key, let answered = state.idempotentAnswers[key] {
                state.idempotentRepeatCount += 1
                return (answered, [])
            }
            let response = route(parsed, honouringConditions: honoursConditions, in: &state)
            if let key, (200..<300).contains(response.statusCode) { state.idempotentAnswers[key] = response }
            defer { state.realtimeOutbox = [] }
            return (response, state.realtimeOutbox)
        }
        if !changes.isEmpty { publishRealtime(changes) }
        response.url = request.url
        switch fault {
        case .malformedBody:
            response.statusCode = 200
            response.body = Data("<html>this is not JSON".utf8)
        case .truncatedBody:
            response.body = response.body.prefix(response.body.count / 2)
        default:
            break
        }
        return response
    }

    func wait(_ delay: Duration, timeout: TimeInterval) async throws(NetworkError) {
        // A non-positive, infinite or absurd timeout means no limit, as URLSession treats it.
        let limit: Duration =
            timeout > 0 && timeout < Duration.longest / .seconds(1) ? .milliseconds(Int64(timeout * 1000)) : .longest
        do {
            // Clamped: `Task.sleep` traps on a deadline decades away.
            try await Task.sleep(for: min(max(delay, .zero), limit, RealTimeLimit.longest))
        } catch {
            throw .cancelled
        }
        if delay > limit { throw .timeout }
    }

    private func route(_ request: ParsedRequest, honouringConditions: Bool, in state: inout State) -> HTTPResponse {
        if let file = state.files["/" + request.segments.joined(separator: "/")] {
            return Self.serve(file.data, contentType: file.contentType, to: request)
        }
        guard let (name, id) = match(request.segments) else {
            return Self.error(404, "The requested resource wasn't found.")
        }
        guard state.collections[name] != nil else { return Self.error(404, "Missing collection context.") }
        if let id, [.patch, .put, .delete].contains(request.method),
            let refusal = refusal(of: request, to: name, id: id, in: state)
        {
            return refusal
        }
        switch (request.method, id) {
        case (.get, nil): return list(name, query: request.query, url: request.url, in: state)
        case (.post, nil): return write(request, to: name, id: nil, replace: false, in: &state)
        case (.get, let id?):
            guard let current = current(name, id, in: state) else { return Self.notFound() }
            if honouringConditions,
                Self.isNotModified(request.recorded.headers, tag: current.tag, modified: current.modified)
            {
                return HTTPResponse(
                    statusCode: 304,
                    headers: [
                        "ETag": current.tag, "Last-Modified": HTTPDate.string(fromSecondsSince1970: current.modified),
                    ])
            }
            return current.response
        case (.patch, let id?): return write(request, to: name, id: id, replace: false, in: &state)
        case (.put, let id?): return write(request, to: name, id: id, replace: true, in: &state)
        case (.delete, let id?):
            guard let removed = state.collections[name]?.records.removeValue(forKey: id) else { return Self.notFound() }
            // The record's files go with it.
            let files = Self.filePath(collection: name, recordID: id, fileName: "")
            for path in state.files.keys where path.hasPrefix(files) { state.files.removeValue(forKey: path) }
            if state.realtimePath != nil {
                state.realtimeOutbox.append(
                    RealtimeChange(
                        collection: name, id: id, action: "delete", record: Self.withSystemFields(removed, name)))
            }
            state.collections[name]?.order.removeAll { $0 == id }
            state.collections[name]?.revisions.removeValue(forKey: id)
            return HTTPResponse(statusCode: 204)
        default:
            return Self.error(405, "Method not allowed.")
        }
    }

    /// A file, whole or the range the request asks for.
    private static func serve(_ data: Data, contentType: String, to request: ParsedRequest) -> HTTPResponse {
        guard request.method == .get || request.method == .head else { return error(405, "Method not allowed.") }
        let tag = entityTag(of: data)
        var headers: HTTPHeaders = ["ETag": tag, "Accept-Ranges": "bytes", "Content-Type": contentType]
        var body = data
        var status = 200
        let asked = request.recorded.headers
        if let range = asked["Range"], asked["If-Range"].map({ $0 == tag }) ?? true,
            let (start, end) = byteRange(range)
        {
            guard start < data.count else {
                headers["Content-Range"] = "bytes */\(data.count)"
                return HTTPResponse(statusCode: 416, headers: headers)
            }
            let last = min(end ?? data.count - 1, data.count - 1)
            body = data.subdata(in: start..<(last + 1))
            status = 206
            headers["Content-Range"] = "bytes \(start)-\(last)/\(data.count)"
        }
        headers["Content-Length"] = "\(body.count)"
        return HTTPResponse(statusCode: status, headers: headers, body: request.method == .head ? Data() : body)
    }

    /// `bytes=start-` or `bytes=start-end`; `nil` for anything else (a suffix or several ranges), which a
    /// server may ignore.
    private static func byteRange(_ value: String) -> (Int, Int?)? {
        guard value.hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst("bytes=".count)
        guard let dash = spec.firstIndex(of: "-"), let start = Int(spec[..<dash]), start >= 0 else { return nil }
        let tail = spec[spec.index(after: dash)...]
        if tail.isEmpty { return (start, nil) }
        guard let end = Int(tail), end >= start else { return nil }
        return (start, end)
    }

    /// Splits a path into collection name and optional id, following ``basePath``.
    private func match(_ segments: [String]) -> (String, String?)? {
        let template = basePath.contains("{collection}") ? basePath : basePath + "/{collection}"
        let pattern = template.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.count == pattern.count || segments.count == pattern.count + 1 else { return nil }
        var name: String?
        for (expected, actual) in zip(pattern, segments) {
            if expected == "{collection}" {
                name = actual
            } else if expected != actual {
                return nil
            }
        }
        guard let name else { return nil }
        return (name, segments.count > pattern.count ? segments.last : nil)
    }

    private func write(
        _ request: ParsedRequest, to name: String, id: String?, replace: Bool, in state: inout State
    ) -> HTTPResponse {
        guard let body = request.body, !body.isEmpty,
            let (fields, files) = ParsedForm.fields(of: body, contentType: request.recorded.headers["Content-Type"])
        else {
            return Self.error(400, "Failed to load the submitted data due to invalid formatting.")
        }
        var record: [String: JSONValue]
        let collection = name
        var previous: [String: JSONValue] = [:]
        if let id {
            guard let existing = state.collections[name]?.records[id] else { return Self.notFound() }
            previous = existing
            record = replace ? fields : existing.merging(fields) { _, new in new }
            // The id as it was seeded: an integer stays a JSON number.
            record["id"] = existing["id"] ?? .string(id)
        } else {
            record = fields
        }
        let required = state.collections[name]?.required ?? []
        let missing = required.filter { record[$0]?.isBlank ?? true }
        if !missing.isEmpty {
            let data = Dictionary(
                uniqueKeysWithValues: missing.map { field in
                    (
                        field,
                        JSONValue.object([
                            "code": .string("validation_required"), "message": .string("Cannot be blank."),
                        ])
                    )
                })
            let message = id == nil ? "Failed to create record." : "Failed to update record."
            return Self.json(400, .object(["status": .int(400), "message": .string(message), "data": .object(data)]))
        }
        guard let stored = state.insert(record, into: name, conflict: id == nil ? .reject : .replace) else {
            let unique: JSONValue = .object([
                "code": .string("validation_not_unique"), "message": .string("Value must be unique."),
            ])
            return Self.json(
                400,
                .object([
                    "status": .int(400), "message": .string("Failed to create record."),
                    "data": .object(["id": unique]),
                ]))
        }
        // A file an update's record no longer names is served no more: a field sent with new files, as an empty
        // array or as text, or left out of a replacement.
        if id != nil {
            for (field, value) in previous {
                guard let names = value.arrayValue?.compactMap(\.stringValue), !names.isEmpty else { continue }
                let kept = Set((record[field]?.arrayValue ?? []).compactMap(\.stringValue))
                for name in names where !kept.contains(name) {
                    state.files.removeValue(
                        forKey: Self.filePath(collection: collection, recordID: stored, fileName: name))
                }
            }
        }
        for file in files {
            let path = Self.filePath(collection: collection, recordID: stored, fileName: file.name)
            state.files[path] = (file.data, file.contentType)
        }
        let answer = Self.withSystemFields(state.collections[name]?.records[stored] ?? record, name)
        if state.realtimePath != nil {
            state.realtimeOutbox.append(
                RealtimeChange(collection: name, id: stored, action: id == nil ? "create" : "update", record: answer))
        }
        // With the validators a `GET` of the record now gives, so that the writer's next write can be conditional.
        return current(name, stored, in: state)?.response ?? Self.json(200, .object(answer))
    }

    /// The record as PocketBase serves it: with `collectionName` and a `collectionId` derived from the name,
    /// unless the record has its own.
    static func withSystemFields(_ record: [String: JSONValue], _ collection: String) -> [String: JSONValue] {
        var record = record
        if record["collectionName"] == nil { record["collectionName"] = .string(collection) }
        if record["collectionId"] == nil { record["collectionId"] = .string(collectionID(collection)) }
        return record
    }

    /// A stable id in PocketBase's shape (`pbc_` and digits), the same for a name in every run.
    static func collectionID(_ name: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "pbc_" + String(hash % 10_000_000_000)
    }

    /// A strong entity tag for a body: a quoted FNV-1a hash, the same for the same bytes.
    static func entityTag(of body: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "\"" + String(hash, radix: 16) + "\""
    }

    /// 2000-01-01 00:00:00 GMT in seconds since 1970: the record written n-th is dated n seconds later.
    static let firstModification: Int64 = 946_684_800

    /// Whether a `GET` of a record with this tag and date (in seconds since 1970) is answered `304`
    /// (RFC 9110 §13.2.2): `If-None-Match`, when present, decides alone; otherwise an `If-Modified-Since` that
    /// is one valid HTTP-date, no earlier than the record's. Any other `If-Modified-Since` is ignored (§13.1.3).
    static func isNotModified(_ headers: HTTPHeaders, tag: String, modified: Int64) -> Bool {
        if let condition = headers["If-None-Match"] { return Self.condition(condition, matches: tag) }
        guard let value = headers["If-Modified-Since"], let since = HTTPDate.seconds(from: value) else { return false }
        return modified <= since
    }

    /// Whether an `If-None-Match` value (`*`, or tags separated by commas, weak or strong) matches `tag`.
    static func condition(_ value: String, matches tag: String) -> Bool {
        value.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || trimmed == tag || trimmed == "W/" + tag
        }
    }

    static func json(_ status: Int, _ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(value)) ?? Data()
        return HTTPResponse(
            statusCode: status, headers: headers.merging(["Content-Type": "application/json"]), body: body)
    }

    static func error(_ status: Int, _ message: String, url: URL? = nil) -> HTTPResponse {
        var response = json(
            status, .object(["status": .int(status), "message": .string(message), "data": .object([:])]))
        response.url = url
        return response
    }

    static func notFound() -> HTTPResponse { error(404, "The requested resource wasn't found.") }
}

/// The parts of a request the backend routes on.
struct ParsedRequest {
    var method: HTTPMethod
    var segments: [String]
    var query: [String: String]
    var body: Data?
    var url: URL?
    var recorded: InMemoryBackend.RecordedRequest

    init(_ request: URLRequest) {
        method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        url = request.url
        let components = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true) }
        segments = decodedSegments(components?.percentEncodedPath ?? "")
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        self.query = query
        body = request.httpBody
        var headers = HTTPHeaders()
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            headers[name] = value
        }
        recorded = InMemoryBackend.RecordedRequest(
            method: method, path: "/" + segments.joined(separator: "/"), query: query, headers: headers, body: body)
    }
}

/// The segments of a percent-encoded path, each decoded: `/groups/a%20b` is `["groups", "a b"]`.
func decodedSegments(_ encodedPath: String) -> [String] {
    encodedPath.split(separator: "/", omittingEmptySubsequences: true).map {
        String($0).removingPercentEncoding ?? String($0)
    }
}

/// The path as ``StubTransport`` and ``InMemoryBackend/requestLog`` compare and record it: decoded segments
/// joined by `/`, with one leading slash.
func decodedPath(_ encodedPath: String) -> String {
    "/" + decodedSegments(encodedPath).joined(separator: "/")
}
