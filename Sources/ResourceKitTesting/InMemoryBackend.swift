public import Foundation
public import ResourceKit

/// A REST server in memory: an `HTTPTransport` with collections of JSON records, pagination, validation,
/// injected faults and a request log.
///
/// Plug it into a real `NetworkSession` so URL building, headers, validation and decoding all run:
/// ```swift
/// let backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
/// backend.addCollection("posts", requiredFields: ["title"])
/// let session = NetworkSession(baseURL: "http://backend.test", transport: backend)
/// ```
///
/// Routes, relative to ``basePath`` (`{collection}` in it stands for the name):
/// - `GET /<collection>`: with `page`/`perPage` (or no paging parameters) PocketBase's envelope
///   `{"page","perPage","totalItems","totalPages","items"}`; with `offset`/`limit` a bare array with
///   `X-Total-Count` and a `Link: <…>; rel="next"` header.
/// - `POST /<collection>` creates (`200` with the record, an `id` generated unless given).
/// - `GET`, `PATCH` (merge), `PUT` (replace), `DELETE` (`204`) on `/<collection>/<id>`. A `GET` of a record
///   carries an `ETag` (a hash of its body) and a `Last-Modified` (an IMF-fixdate), and answers
///   `304 Not Modified`, with those two headers and no body, to an `If-None-Match` that names the tag or, in a
///   request without `If-None-Match` (which takes precedence, RFC 9110 §13.2.2), to an `If-Modified-Since` no
///   earlier than the record's date. An `If-Modified-Since` that is not one HTTP-date (IMF-fixdate, RFC 850 or
///   asctime) is ignored. (PocketBase sends neither; a resource then simply reads in full.)
/// - A `PATCH`, `PUT` or `DELETE` of a record honours preconditions (RFC 9110 §13.2.2): an `If-Match` that
///   names none of the record's current tag (`*` names any; a weak tag never matches), or, without `If-Match`,
///   an `If-Unmodified-Since` earlier than the record's date, is answered `412 Precondition Failed` with the
///   current record, its `ETag` and `Last-Modified` (an error body when the record is gone), and changes
///   nothing. With ``requiresPreconditions``, a write with neither header is answered `428`. Every `200` to a
///   write carries the record's new `ETag` and `Last-Modified`. (PocketBase honours no preconditions: it
///   applies the write.)
/// - Missing required fields answer `400` with PocketBase's field errors; unknown records `404`.
///
/// The backend has no clock, so `Last-Modified` counts writes: the record written n-th (seeded, created or
/// updated) since the backend was made is dated n seconds after `Sat, 01 Jan 2000 00:00:00 GMT`. A record's
/// date changes with every write to it, two versions never share one, and reading a record leaves it as it is.
///
/// An injected ``Fault`` fires on the next request, whatever it is: a conditional request that would have
/// been answered `304` gets the fault too (a broken body comes as a full `200`).
public final class InMemoryBackend: HTTPTransport {
    /// One request as the backend received it.
    public struct RecordedRequest: Sendable, Equatable {
        /// The method.
        public var method: HTTPMethod
        /// The URL path, percent-decoded, as ``StubTransport`` matches it.
        public var path: String
        /// The query items.
        public var query: [String: String]
        /// The headers.
        public var headers: HTTPHeaders
        /// The body.
        public var body: Data?
    }

    /// A fault the backend injects into upcoming responses.
    ///
    /// Each fault is taken by the next request the backend receives, conditional or not: the body faults
    /// answer a conditional request with the full record, broken, instead of a `304`.
    ///
    /// A struct with static members, so that a later release can add faults without breaking your code.
    public struct Fault: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            case status(Int)
            case dropConnection
            case malformedBody
            case truncatedBody
            case slowBody(Duration)
        }

        let kind: Kind

        /// Answer with this status and a PocketBase-shaped error body (`NetworkError/httpStatus(code:body:headers:)`
        /// with the default validation).
        /// - Parameter code: The status code.
        public static func status(_ code: Int) -> Fault { Fault(kind: .status(code)) }
        /// Drop the connection before answering: a `NetworkError/Code/transport` error with
        /// `networkConnectionLost` and "the server closed the connection before answering", exactly what
        /// `URLSessionTransport` gives for a real server that closes the connection before any response byte,
        /// so `RetryPolicy.standard` retries an idempotent request after it.
        public static let dropConnection = Fault(kind: .dropConnection)
        /// Answer `200` with a body that is not JSON (`NetworkError/Code/decoding`), even to a conditional
        /// request. A write is applied all the same (and tells realtime clients): only its answer is broken, as
        /// when a proxy mangles a response. A realtime connection gets a body that is no event stream.
        public static let malformedBody = Fault(kind: .malformedBody)
        /// Answer with the real body cut in half (`NetworkError/Code/decoding`); a conditional request gets
        /// the full response, cut, instead of a `304`. A write is applied all the same. A realtime connection's
        /// stream is cut before its first event (`networkConnectionLost`).
        public static let truncatedBody = Fault(kind: .truncatedBody)
        /// Deliver the real response after a delay; past the request's timeout it fails with
        /// `NetworkError/timeout`. Within it, a conditional request may still be answered `304`.
        /// - Parameter delay: How long the response takes.
        public static func slowBody(_ delay: Duration) -> Fault { Fault(kind: .slowBody(delay)) }
    }

    struct Collection {
        var required: [String]
        var records: [String: [String: JSONValue]] = [:]
        var order: [String] = []
        /// The backend's `State.revision` when each record was last written: its `Last-Modified`.
        var revisions: [String: Int64] = [:]
    }

    struct State {
        var collections: [String: Collection] = [:]
        var log: [RecordedRequest] = []
        /// Queued faults, each with how many requests it still affects: `count: .max` holds one entry.
        var faults: [(fault: Fault, count: Int)] = []
        var latency: Duration = .zero
        var nextID = 0
        /// How many records have been written, ever: each write gets the next number, so no two versions of
        /// a record share one.
        var revision: Int64 = 0
        /// Files served by path (decoded, with its leading `/`), and the content type of each.
        var files: [String: (data: Data, contentType: String)] = [:]
        /// Where PocketBase's realtime API is served, if it is (see `serveRealtime(at:)`).
        var realtimePath: String?
        var realtimeClients: [String: RealtimeClient] = [:]
        /// Writes done since the last request's end, for the realtime clients.
        var realtimeOutbox: [RealtimeChange] = []
        /// Whether requests reach the backend at all.
        var isReachable = true
        var requiresPreconditions = false
        /// The first answer to each `Idempotency-Key` of a write, given again to a repeated request.
        var idempotentAnswers: [String: HTTPResponse] = [:]
        var idempotentRepeatCount = 0
    }

    let state = Locked(State())
    /// The path before the collection name, or a template with `{collection}`.
    public let basePath: String

    /// Creates an empty backend.
    /// - Parameters:
    ///   - basePath: The path under which collections live: a prefix such as `/api`, or a template such as
    ///     `/api/collections/{collection}/records` (PocketBase's layout). Empty by default.
    ///   - latency: How long every response takes, waited without blocking a thread.
    public init(basePath: String = "", latency: Duration = .zero) {
        self.basePath = basePath
        state.withLock { $0.latency = latency }
    }

    /// Serves `data` at `path` for `GET` and `HEAD`, as a file server would: with an `ETag`, `Accept-Ranges:
    /// bytes`, and ranges (`Range: bytes=start-` or `start-end`, honoured as `206` with `Content-Range` unless
    /// an `If-Range` names another tag; `416` past the end). Replaces a file already there, which changes its
    /// tag if the bytes differ; a ``Fault`` applies as to any request (`truncatedBody` cuts the body, so a
    /// download can be interrupted and resumed offline).
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - path: The URL path, such as `/files/report.pdf`; compared decoded.
    ///   - contentType: Its `Content-Type`.
    public func serve(_ data: Data, at path: String, contentType: String = "application/octet-stream") {
        let path = path.hasPrefix("/") ? path : "/" + path
        state.withLock { $0.files[path.removingPercentEncoding ?? path] = (data, contentType) }
    }

    /// Stops serving the file at `path`: it answers `404` again.
    /// - Parameter path: The URL path given to ``serve(_:at:contentType:)``.
    public func removeFile(at path: String) {
        let path = path.hasPrefix("/") ? path : "/" + path
        state.withLock { _ = $0.files.removeValue(forKey: path.removingPercentEncoding ?? path) }
    }

    /// Creates a collection, or changes its required fields.
    /// - Parameters:
    ///   - name: The collection name.
    ///   - requiredFields: Fields that must be present and not blank on create and update.
    public func addCollection(_ name: String, requiredFields: [String] = []) {
        state.withLock { state in
            if state.collections[name] == nil {
                state.collections[name] = Collection(required: requiredFields)
            } else {
                state.collections[name]?.required = requiredFields
            }
        }
    }

    /// Stores values in a collection, creating it if needed.
    ///
    /// A value's `id`, a string or an integer, is kept (a value seeded again under the same id replaces the
    /// record); a value without one gets a generated id that no record in the collection has.
    /// - Parameters:
    ///   - values: The values, encoded as JSON objects.
    ///   - collection: The collection name.
    /// - Returns: The ids of the stored records, in order.
    /// - Throws: `NetworkError/encoding(_:)` when a value does not encode to a JSON object.
    @discardableResult
    public func seed<Value: Encodable>(_ values: [Value], into collection: String) throws(NetworkError) -> [String] {
        try seed(values, into: collection, conflict: .replace)
    }

    func seed<Value: Encodable>(
        _ values: [Value], into collection: String, conflict: State.Conflict
    ) throws(NetworkError) -> [String] {
        var objects: [[String: JSONValue]] = []
        for value in values {
            do {
                let json = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
                guard let object = json.objectValue else {
                    throw NetworkError.encoding("\(Value.self) is not an object")
                }
                objects.append(object)
            } catch {
                throw NetworkError(error)
            }
        }
        return state.withLock { state in
            if state.collections[collection] == nil { state.collections[collection] = Collection(required: []) }
            return objects.compactMap { object in state.insert(object, into: collection, conflict: conflict) }
        }
    }

    /// Stores `count` placeholders of a type, each with its own id: a placeholder whose id is already stored
    /// (copies of one value, for example) gets a generated one.
    /// - Parameters:
    ///   - type: The placeholder type.
    ///   - count: How many: none below 1, at most 10,000.
    ///   - collection: The collection name.
    /// - Returns: The ids.
    /// - Throws: `NetworkError/encoding(_:)`.
    @discardableResult
    public func seedPlaceholders<Value: Placeholdable & Encodable>(
        _ type: Value.Type, count: Int, into collection: String
    ) throws(NetworkError) -> [String] {
        // Placeholders are often copies of one value: each gets its own id rather than replacing the last.
        try seed(Value.placeholders(count: min(max(0, count), 10_000)), into: collection, conflict: .generateID)
    }

    /// The records of a collection, in creation order.
    /// - Parameter collection: The collection name.
    /// - Returns: The records as JSON objects.
    public func records(in collection: String) -> [[String: JSONValue]] {
        state.withLock { state in
            guard let stored = state.collections[collection] else { return [] }
            return stored.order.compactMap { stored.records[$0] }
        }
    }

    /// Decodes the records of a collection.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - collection: The collection name.
    /// - Returns: The decoded records.
    /// - Throws: `NetworkError/decoding(type:codingPath:message:)`.
    public func records<Value: Decodable>(_ type: Value.Type, in collection: String) throws(NetworkError) -> [Value] {
        do {
            return try JSONDecoder().decode([Value].self, from: JSONEncoder().encode(records(in: collection)))
        } catch {
            throw NetworkError(error)
        }
    }

    /// Every request received, in order.
    public var requestLog: [RecordedRequest] { state.withLock { $0.log } }

    /// Forgets the logged requests.
    public func clearLog() { state.withLock { $0.log.removeAll() } }

    /// How long every response takes from now on.
    /// - Parameter latency: The delay.
    public func setLatency(_ latency: Duration) { state.withLock { $0.latency = latency } }

    /// Injects a fault into the next `count` requests, after any faults already queued.
    /// - Parameters:
    ///   - fault: The fault.
    ///   - count: How many requests it affects.
    public func injectFault(_ fault: Fault, count: Int = 1) {
        guard count > 0 else { return }
        state.withLock { $0.faults.append((fault, count)) }
    }

    /// Whether requests reach the backend: while `false`, every request fails as if the device were offline
    /// (`NetworkError.transport` with `notConnectedToInternet`) and is not logged, for it never arrived, a
    /// realtime connection's included; setting it to `false` ends the open realtime streams with
    /// `networkConnectionLost`.
    public var isReachable: Bool {
        get { state.withLock { $0.isReachable } }
        set {
            let cut = state.withLock { state -> [RealtimeClient] in
                state.isReachable = newValue
                return newValue ? [] : Array(state.realtimeClients.values)
            }
            for client in cut {
                client.writer.finish(
                    throwing: .transport(code: .networkConnectionLost, message: "the network went away"))
            }
        }
    }

    /// Whether a `PATCH`, `PUT` or `DELETE` of a record must carry `If-Match` or `If-Unmodified-Since`: while
    /// `true`, one with neither is answered `428 Precondition Required` (RFC 6585) and changes nothing. `false`
    /// by default. Preconditions are honoured either way: see the type's description.
    public var requiresPreconditions: Bool {
        get { state.withLock { $0.requiresPreconditions } }
        set { state.withLock { $0.requiresPreconditions = newValue } }
    }

    /// How many writes were answered again from an earlier answer to their `Idempotency-Key`, without being
    /// applied a second time.
    public var idempotentRepeats: Int { state.withLock { $0.idempotentRepeatCount } }

    /// Fails the next `count` requests with a status code.
    /// - Parameters:
    ///   - count: How many requests.
    ///   - status: The status code.
    public func failNext(_ count: Int = 1, status: Int) { injectFault(.status(status), count: count) }
}

extension InMemoryBackend.State {
    /// The next request's fault, if one is queued.
    mutating func takeFault() -> InMemoryBackend.Fault.Kind? {
        guard let first = faults.first else { return nil }
        if first.count > 1 { faults[0].count -= 1 } else { faults.removeFirst() }
        return first.fault.kind
    }

    /// What to do when a stored record already has the new record's id.
    enum Conflict {
        /// Replace it: seeding a value again, or a write to that id.
        case replace
        /// Give the new record a generated id instead.
        case generateID
        /// Store nothing: a create with a taken id (PocketBase answers 400 `validation_not_unique`).
        case reject
    }

    /// Stores a record and returns its id; `nil` when `conflict` is `.reject` and the id is taken.
    ///
    /// A string or integer `id` is kept as it is (an integer stays a JSON number); a missing or empty one gets
    /// a 15-character generated id, never one that is already stored.
    mutating func insert(
        _ object: [String: JSONValue], into collection: String, conflict: Conflict = .replace
    ) -> String? {
        var object = object
        var id: String?
        switch object["id"] {
        case .string(let given) where !given.isEmpty: id = given
        case .int(let given): id = String(given)
        default: id = nil
        }
        if let given = id, collections[collection]?.records[given] != nil {
            switch conflict {
            case .replace: break
            case .generateID: id = nil
            case .reject: return nil
            }
        }
        var stored = id ?? ""
        if id == nil {
            repeat {
                nextID += 1
                stored = String(nextID).leftPadded(to: 15)
            } while collections[collection]?.records[stored] != nil
            object["id"] = .string(stored)
        }
        if collections[collection]?.records[stored] == nil { collections[collection]?.order.append(stored) }
        collections[collection]?.records[stored] = object
        revision += 1
        collections[collection]?.revisions[stored] = revision
        return stored
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
