public import Foundation

/// A description of one HTTP request relative to a session's base URL.
///
/// ```swift
/// let endpoint = Endpoint(.get, "posts", query: ["sort": "-created"])
/// let one = Endpoint(.get, "posts").appending(id: postID)   // "posts/<percent-encoded id>"
/// ```
public struct Endpoint: Sendable {
    /// The HTTP method.
    public var method: HTTPMethod
    /// The path relative to the base URL, percent-encoded. An absolute URL (`https://…`) is sent as it is, not
    /// relative to the base URL; the base URL is still resolved for it when the session has adapters, an
    /// authenticator or credentials among its default headers, to decide whether they go to its origin, so a
    /// base URL that cannot be resolved then fails it too.
    public var path: String
    /// Query items, appended to any the base URL has. Values are percent-encoded strictly on the way out.
    public var queryItems: [URLQueryItem]
    /// Headers for this request. They win over the session's defaults, compared case-insensitively.
    public var headers: HTTPHeaders
    /// The request body.
    public var body: RequestBody?
    /// How long this whole call may take, replacing the session's ``NetworkSession/Configuration/timeLimit``:
    /// every attempt (its adapters and authenticator included), redirect and wait between retries must end
    /// within it, or the call fails with ``NetworkError/timeout``
    /// and the request in flight is cancelled. `nil` (the default) keeps the session's limit. Sub-second
    /// limits hold (`.milliseconds(800)`). A limit that is not positive or above 10⁹ seconds means none for
    /// this request, whatever the session's (`.zero` lifts it; the transport's own timeout still applies).
    /// The built `URLRequest`'s `timeoutInterval` is this limit rounded up to whole seconds, so a transport
    /// that truncates it (`URLSession` on Linux) never ends the request before the limit.
    public var timeLimit: Duration?
    /// How this request is retried, replacing the session's ``RetryPolicy``.
    public var retry: RetryPolicy?
    /// Where the upload's bytes are told (ResourceKitTransfer's `uploadProgress`); the session restarts it for
    /// each attempt and finishes it when the call ends.
    package var progress: (any ProgressReporting)?
    /// How long the transfer may go without a byte sent or received before the transport ends it, for this
    /// request: the `URLRequest`'s `timeoutInterval`, whole seconds rounded up, which `URLSession` measures as
    /// inactivity. With `nil` (the default), or a value that is not positive or above 10⁹ seconds, the
    /// `timeoutInterval` is the call's time limit rounded up: the endpoint's ``timeLimit``, else the session's
    /// (which a body that streams does not take); with no limit, the transport's own timeout applies
    /// (`URLSessionTransport(timeout:)`, 60 s by default). `StubTransport`
    /// ignores it; `InMemoryBackend` bounds the latency it simulates by the `timeoutInterval`.
    public var inactivityTimeout: Duration?
    /// How this request's redirects are followed, replacing the session's ``RedirectPolicy``; `nil` keeps the
    /// session's, ``RedirectPolicy/never`` follows none.
    public var redirects: RedirectPolicy?
    /// Why this endpoint must not be sent, such as an empty id; sending it fails with
    /// ``NetworkError/invalidRequest(_:)`` before any request is built.
    package var problem: String?

    /// Creates an endpoint.
    /// - Parameters:
    ///   - method: The HTTP method; `GET` by default.
    ///   - path: The path relative to the base URL, or an absolute URL string. Characters not allowed in a
    ///     path are percent-encoded; `/` separates segments. Use ``appending(id:)`` for values such as ids.
    ///   - query: Query items as name–value pairs, in name order.
    ///   - headers: Headers for this request.
    ///   - body: The request body.
    ///   - timeLimit: How long the whole call may take, replacing the session's limit (see ``timeLimit``).
    public init(
        _ method: HTTPMethod = .get,
        _ path: String,
        query: [String: String] = [:],
        headers: HTTPHeaders = HTTPHeaders(),
        body: RequestBody? = nil,
        timeLimit: Duration? = nil
    ) {
        self.init(
            method, path,
            queryItems: query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) },
            headers: headers, body: body, timeLimit: timeLimit)
    }

    /// Creates an endpoint with query items in the given order, repeated names included
    /// (`?tag=a&tag=b`).
    /// - Parameters:
    ///   - method: The HTTP method; `GET` by default.
    ///   - path: The path relative to the base URL, or an absolute URL string.
    ///   - queryItems: The query items, in order.
    ///   - headers: Headers for this request.
    ///   - body: The request body.
    ///   - timeLimit: How long the whole call may take, replacing the session's limit (see ``timeLimit``).
    public init(
        _ method: HTTPMethod = .get,
        _ path: String,
        queryItems: [URLQueryItem],
        headers: HTTPHeaders = HTTPHeaders(),
        body: RequestBody? = nil,
        timeLimit: Duration? = nil
    ) {
        self.method = method
        self.path = Self.isAbsolute(path) ? path : URLBuilder.sanitizePath(path)
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.timeLimit = timeLimit
    }

    /// Returns this endpoint with one more path segment holding `id`, percent-encoded so that it stays one
    /// segment whatever it contains (`../admin` and `a?b#c` included).
    ///
    /// An empty id would address the collection itself (a `DELETE` of `posts/` instead of one post), so the
    /// endpoint it returns fails with ``NetworkError/invalidRequest(_:)`` when sent.
    /// - Parameter id: The value to place in the path.
    /// - Returns: The extended endpoint.
    public func appending(id: some CustomStringConvertible) -> Endpoint {
        var copy = self
        guard !id.description.isEmpty else {
            copy.problem = copy.problem ?? "an empty id cannot be appended to '\(path)'"
            return copy
        }
        let segment = Self.encodeSegment(id.description)
        copy.path = path.hasSuffix("/") ? path + segment : path + "/" + segment
        return copy
    }

    /// Returns this endpoint with a query item added, replacing one of the same name.
    /// - Parameters:
    ///   - name: The item's name.
    ///   - value: The item's value.
    /// - Returns: The extended endpoint.
    public func setting(query name: String, to value: String?) -> Endpoint {
        var copy = self
        copy.queryItems.removeAll { $0.name == name }
        copy.queryItems.append(URLQueryItem(name: name, value: value))
        return copy
    }

    /// Returns this endpoint with a header set.
    /// - Parameters:
    ///   - name: The header name.
    ///   - value: The value.
    /// - Returns: The extended endpoint.
    public func setting(header name: String, to value: String?) -> Endpoint {
        var copy = self
        copy.headers[name] = value
        return copy
    }

    /// Whether `path` starts with `http://` or `https://`, in any case. Compared byte by byte: every endpoint
    /// and every request asks, and `lowercased()` allocated each time.
    static func isAbsolute(_ path: String) -> Bool {
        hasSchemePrefix(path, "http://") || hasSchemePrefix(path, "https://")
    }

    private static func hasSchemePrefix(_ path: String, _ prefix: StaticString) -> Bool {
        let bytes = path.utf8
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        return prefix.withUTF8Buffer { expected in
            // `expected` is lower-case ASCII: a letter matches either case, `:` and `/` only themselves.
            zip(bytes, expected).allSatisfy { byte, lower in
                byte == lower || (lower >= 0x61 && lower <= 0x7A && byte | 0x20 == lower)
            }
        }
    }

    private static let segmentAllowed: CharacterSet = {
        var set = CharacterSet.urlPathAllowed
        set.remove(charactersIn: "/;%")
        return set
    }()

    /// `segmentAllowed` for ASCII, looked up by byte.
    private static let segmentAllowedASCII = ASCIITable(segmentAllowed)

    static func encodeSegment(_ segment: String) -> String {
        // A whole segment of "." or ".." would be a dot-segment that walks up the path.
        if segment == "." { return "%2E" }
        if segment == ".." { return "%2E%2E" }
        // Most ids need no escape: then `addingPercentEncoding` would return the segment as it is.
        if segmentAllowedASCII.containsAll(segment.utf8) { return segment }
        return segment.addingPercentEncoding(withAllowedCharacters: segmentAllowed) ?? ""
    }
}

/// The body of a request.
///
/// A struct with static members, so that a later release can add kinds of bodies without breaking your
/// code.
public struct RequestBody: Sendable, Equatable {
    enum Kind: Sendable {
        case json(any Encodable & Sendable)
        case data(Data, contentType: String)
        case form([URLQueryItem])
        /// A body another module composes (ResourceKitTransfer's multipart form).
        case composed(any ComposedBody)
        case file(URL, contentType: String)
        case stream(OneShotStream, contentType: String)
    }

    let kind: Kind

    /// A body of a kind another module composes.
    package init(composed body: any ComposedBody) { kind = .composed(body) }

    init(kind: Kind) { self.kind = kind }

    /// A value encoded with the session's JSON encoder, sent as `application/json`.
    /// - Parameter value: The value to encode.
    public static func json(_ value: any Encodable & Sendable) -> RequestBody { RequestBody(kind: .json(value)) }

    /// Raw bytes with their content type.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - contentType: The `Content-Type` header's value.
    public static func data(_ data: Data, contentType: String) -> RequestBody {
        RequestBody(kind: .data(data, contentType: contentType))
    }

    /// Fields sent as `application/x-www-form-urlencoded`.
    /// - Parameter items: The fields, in order.
    public static func form(_ items: [URLQueryItem]) -> RequestBody { RequestBody(kind: .form(items)) }

    /// A file, streamed from disk as the transport sends it, never read whole into memory.
    ///
    /// The file is checked when the request is built: a URL that is not a file URL, or a file that is missing,
    /// not a regular file (a directory, a FIFO) or not readable, fails with ``NetworkError/file(_:)`` before
    /// anything is sent. It is sent as long as it was then: a file that becomes shorter while it is sent fails
    /// the call with ``NetworkError/file(_:)``, and bytes it gains are not sent. It is read again from its
    /// start for each attempt the ``RetryPolicy`` makes and for a redirect that repeats the body. The body is
    /// sent without a `Content-Length` (with `Transfer-Encoding: chunked` on Linux, whose `URLSession` sends
    /// no length for a streamed body). `URLSession` reads it on its own thread, which every session of the
    /// process shares, so a slow disk slows every transfer. ResourceKitTransfer's catalog gives the time limits
    /// of a long upload.
    /// - Parameters:
    ///   - url: The file.
    ///   - contentType: The `Content-Type` header's value.
    public static func file(_ url: URL, contentType: String = "application/octet-stream") -> RequestBody {
        RequestBody(kind: .file(url, contentType: contentType))
    }

    /// A stream of bytes, read once as the transport sends it.
    ///
    /// A stream cannot be read twice, so a request with this body is sent once: no ``RetryPolicy`` repeats it,
    /// a `401` is its answer (the ``Authenticator`` neither refreshes nor sends it again), and a redirect that
    /// would repeat the body (a `307`, a `308`, or a `301`/`302` of a method other than `POST`) fails with
    /// ``NetworkError/transport(code:message:)`` (`requestBodyStreamExhausted`). A `301`/`302` of a `POST` and
    /// a `303`, which continue without the body, are followed. A read that fails fails the call with
    /// ``NetworkError/file(_:)``.
    ///
    /// Give the stream to no one else: the transport opens and reads it, and it is closed at its end or when
    /// the stream the transport read is released. `URLSession` reads it on its own thread, which every session
    /// of the process shares: give a stream whose reads return promptly (a file, bytes in memory), never one
    /// that waits for a producer. Prefer ``file(_:contentType:)`` for a file: it can be sent again.
    /// - Parameters:
    ///   - stream: The stream, not yet opened.
    ///   - contentType: The `Content-Type` header's value.
    public static func stream(_ stream: InputStream, contentType: String = "application/octet-stream")
        -> RequestBody
    {
        RequestBody(kind: .stream(OneShotStream(stream), contentType: contentType))
    }

    /// Whether the body is sent as a stream (a file, a form with files, a stream) rather than bytes built in
    /// memory.
    var streams: Bool {
        switch kind {
        case .file, .stream: return true
        case .composed(let body): return body.streams
        case .json, .data, .form: return false
        }
    }

    var isEmpty: Bool {
        if case .data(let data, _) = kind { return data.isEmpty }
        return false
    }

    /// Raw, form and multipart bodies compare by content, file bodies by URL and content type, stream bodies by
    /// the stream's identity; JSON bodies never compare equal, as their values are opaque.
    public static func == (lhs: RequestBody, rhs: RequestBody) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.data(let a, let typeA), .data(let b, let typeB)): return a == b && typeA == typeB
        case (.form(let a), .form(let b)): return a == b
        case (.composed(let a), .composed(let b)): return a.isEqual(to: b)
        case (.file(let a, let typeA), .file(let b, let typeB)): return a == b && typeA == typeB
        case (.stream(let a, let typeA), .stream(let b, let typeB)): return a === b && typeA == typeB
        default: return false
        }
    }
}

/// Which ASCII bytes a `CharacterSet` holds, read from the set itself once, so that text made of them only
/// is recognised without a `CharacterSet` lookup per character.
struct ASCIITable: Sendable {
    private let allowed: [Bool]

    init(_ set: CharacterSet) {
        allowed = (0..<128).map { set.contains(Unicode.Scalar(UInt8($0))) }
    }

    /// Whether every byte is ASCII and in the set.
    func containsAll(_ bytes: String.UTF8View) -> Bool {
        bytes.allSatisfy { $0 < 0x80 && allowed[Int($0)] }
    }
}
