public import Foundation

/// How important a log event is. Levels compare by importance; a later release may add levels between
/// these, so a `switch` over one needs a `default`.
public struct LogLevel: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The level's importance: higher is more important.
    public let rawValue: Int

    @inlinable init(_ rawValue: Int) { self.rawValue = rawValue }

    /// Every event but failures, retries and credential refreshes: requests, redirects, and the debug kinds a
    /// module adds (ResourceKit's state changes of resources and lists).
    @inlinable public static var debug: LogLevel { LogLevel(0) }
    /// Notable events.
    @inlinable public static var info: LogLevel { LogLevel(1) }
    /// Failures the caller will see.
    @inlinable public static var error: LogLevel { LogLevel(2) }

    /// Compares by importance.
    @inlinable public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name.
    public var description: String {
        switch rawValue {
        case 0: "debug"
        case 1: "info"
        case 2: "error"
        default: "level \(rawValue)"
        }
    }

    /// Decodes a level from its name.
    /// - Parameter decoder: The decoder to read from.
    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let level = [LogLevel.debug, .info, .error].first(where: { $0.description == name }) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "unknown level \(name)"))
        }
        self = level
    }

    /// Encodes the level as its name.
    /// - Parameter encoder: The encoder to write to.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// What the session hides in its events (``DiagnosticEvent``, which its logger and its diagnostics stream
/// receive): values of query items with secret names and (always) user info in every URL, and values of
/// secret headers in the response headers an event's ``DiagnosticEvent/error`` carries. Names compare
/// case-insensitively. A hidden header value reads `<redacted>`; in a URL, hidden user info and query values
/// read `redacted` (`https://redacted@api.example.com/posts?token=redacted&page=2`). The URLs in URL-valued
/// headers (`Location`, `Content-Location`, `Referer`, and each target of `Link`) are redacted the same way.
/// Events carry no request headers.
///
/// ```swift
/// let session = NetworkSession(
///     baseURL: "https://api.example.com",
///     redaction: .standard.adding(queryItems: ["sig"], headers: ["x-api-key"]),
///     logger: StandardErrorLogger())
/// ```
public struct LogRedaction: Sendable, Equatable {
    /// Header names whose values are hidden, lower-cased.
    public private(set) var headers: Set<String>
    /// Query item names whose values are hidden, lower-cased.
    public private(set) var queryItems: Set<String>

    /// Creates a redaction.
    /// - Parameters:
    ///   - headers: Header names whose values are hidden.
    ///   - queryItems: Query item names whose values are hidden.
    public init(headers: Set<String>, queryItems: Set<String>) {
        self.headers = Set(headers.map { $0.lowercased() })
        self.queryItems = Set(queryItems.map { $0.lowercased() })
    }

    /// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`; the query items `token`,
    /// `access_token`, `refresh_token`, `id_token`, `api_key`, `apikey`, `key`, `password`, `secret`,
    /// `client_secret`, `signature` and `sig`; and user info in every URL.
    public static let standard = LogRedaction(
        headers: ["authorization", "proxy-authorization", "cookie", "set-cookie"],
        queryItems: [
            "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key", "password", "secret",
            "client_secret", "signature", "sig",
        ])

    /// This redaction with more names.
    /// - Parameters:
    ///   - queryItems: More query item names to hide.
    ///   - headers: More header names to hide.
    /// - Returns: The extended redaction.
    public func adding(queryItems: Set<String> = [], headers: Set<String> = []) -> LogRedaction {
        LogRedaction(headers: self.headers.union(headers), queryItems: self.queryItems.union(queryItems))
    }

    /// Header names whose values are a URL reference, redacted as URLs.
    static let urlHeaders: Set<String> = ["location", "content-location", "referer"]

    /// The headers with secret values replaced, and the URLs in `Location`, `Content-Location`, `Referer` and
    /// `Link` redacted as URLs are.
    public func redact(_ headers: HTTPHeaders) -> HTTPHeaders {
        var result = HTTPHeaders()
        for field in headers {
            let name = field.name.lowercased()
            if self.headers.contains(name) {
                result[field.name] = "<redacted>"
            } else if Self.urlHeaders.contains(name) {
                result[field.name] = redact(reference: field.value)
            } else if name == "link" {
                result[field.name] = redact(links: field.value)
            } else {
                result[field.name] = field.value
            }
        }
        return result
    }

    /// The error with the response headers it carries redacted like logged headers.
    func redact(_ error: NetworkError) -> NetworkError {
        switch error.kind {
        case .httpStatus(let code, let body, let headers):
            return .httpStatus(code: code, body: body, headers: redact(headers))
        case .server(var server):
            server.headers = redact(server.headers)
            return .server(server)
        case .authenticationFailed(let inner):
            return .authenticationFailed(redact(inner))
        default:
            return error
        }
    }

    /// A URL reference (absolute or relative) as text, redacted; `redacted` when it does not parse.
    func redact(reference: String) -> String {
        guard let url = URL(string: reference.trimmingCharacters(in: .whitespaces)) else { return "redacted" }
        return redact(url)
    }

    /// A `Link` header (RFC 8288) with every `<target>` redacted; parameters, quoted strings included, stay.
    private func redact(links value: String) -> String {
        var result = ""
        var index = value.startIndex
        var isQuoted = false
        var isEscaped = false
        while index < value.endIndex {
            let character = value[index]
            if !isQuoted, character == "<" {
                let start = value.index(after: index)
                // An unterminated target runs to the end: it is redacted all the same.
                let end = value[start...].firstIndex(of: ">") ?? value.endIndex
                result += "<" + redact(reference: String(value[start..<end]))
                if end < value.endIndex { result += ">" }
                index = end < value.endIndex ? value.index(after: end) : end
                continue
            }
            if isEscaped {
                isEscaped = false
            } else if isQuoted, character == "\\" {
                isEscaped = true
            } else if character == "\"" {
                isQuoted.toggle()
            }
            result.append(character)
            index = value.index(after: index)
        }
        return result
    }

    /// Whether the URL has a query or user info: one pass over its bytes.
    private static func mayHideSecrets(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            bytes.contains { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "@") }
        }
    }

    /// The URL as text, with user info and secret query values replaced.
    public func redact(_ url: URL?) -> String {
        guard let url else { return "" }
        // Nothing to hide without user info or a query: the common case costs no parse.
        let text = url.absoluteString
        if !Self.mayHideSecrets(text) { return text }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return "redacted"
        }
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            components.percentEncodedUser = "redacted"
            components.percentEncodedPassword = nil
        }
        if let items = components.percentEncodedQueryItems, !queryItems.isEmpty {
            components.percentEncodedQueryItems = items.map { item in
                let name = item.name.removingPercentEncoding ?? item.name
                guard queryItems.contains(name.lowercased()), item.value != nil else { return item }
                return URLQueryItem(name: item.name, value: "redacted")
            }
        }
        return components.string ?? "redacted"
    }
}

/// Receives the session's events as they happen: the ``DiagnosticEvent``s that
/// ``NetworkSession/diagnostics(bufferingNewest:)`` streams, built and redacted once for both, each at its
/// level (``DiagnosticEvent/Kind/requestFailed`` at ``LogLevel/error``; ``DiagnosticEvent/Kind/retry`` and
/// ``DiagnosticEvent/Kind/credentialRefresh`` at ``LogLevel/info``; every other kind, requests, redirects and
/// the kinds a module adds at that level, ResourceKit's state changes of resources and lists among them, at
/// ``LogLevel/debug``). The default, ``SilentLogger``, takes none.
///
/// `log` is called on the thread that emits the event, after the library released its locks: a logger may
/// read a resource's state or a list's items. It runs on the path of the request or the change it tells of,
/// so it should be quick; a logger that needs more hands the event off, to a buffer or a task of its own.
/// The events of one thread reach it in the order they happened; events emitted at once on two threads may
/// reach it in another order than a `session.diagnostics()` stream, which has the library's order.
///
/// ```swift
/// struct Counter: NetworkLogging {
///     let minimumLevel = LogLevel.debug
///     func log(_ level: LogLevel, _ event: DiagnosticEvent) {
///         if event.kind == .requestFinished, let status = event.status { record(status, event.duration) }
///     }
/// }
/// ```
public protocol NetworkLogging: Sendable {
    /// Events below this level are not built or delivered. Read once, when the session is made: a logger
    /// whose level changes later keeps the first.
    var minimumLevel: LogLevel { get }
    /// Receives one event.
    /// - Parameters:
    ///   - level: The event's level.
    ///   - event: The event.
    func log(_ level: LogLevel, _ event: DiagnosticEvent)
}

/// Logs nothing.
public struct SilentLogger: NetworkLogging {
    /// Creates the logger.
    public init() {}
    /// The highest level; the session builds no event for this logger whatever it says.
    public var minimumLevel: LogLevel { .error }
    /// Drops the event.
    public func log(_ level: LogLevel, _ event: DiagnosticEvent) {}
}

/// Writes one line per event to standard error.
public struct StandardErrorLogger: NetworkLogging {
    /// Events below this level are dropped.
    public var minimumLevel: LogLevel

    /// Creates the logger.
    /// - Parameter minimumLevel: Events below this level are dropped.
    public init(minimumLevel: LogLevel = .debug) { self.minimumLevel = minimumLevel }

    /// Writes the event.
    public func log(_ level: LogLevel, _ event: DiagnosticEvent) {
        guard level >= minimumLevel else { return }
        FileHandle.standardError.write(Data("[ResourceKit] \(level): \(event)\n".utf8))
    }
}
