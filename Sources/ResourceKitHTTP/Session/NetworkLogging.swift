public import Foundation

/// How important a log event is. Levels compare by importance; a later release may add levels between
/// these, so a `switch` over one needs a `default`.
public struct LogLevel: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The level's importance: higher is more important.
    public let rawValue: Int

    @inlinable init(_ rawValue: Int) { self.rawValue = rawValue }

    /// Every request and response.
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

/// What the session reports to its logger, already redacted by the session's ``LogRedaction``.
///
/// Read ``kind`` to tell events apart, then the properties that kind fills: a later release may add kinds
/// and properties without breaking a `switch` over ``kind`` that has a `default`.
///
/// ```swift
/// struct Counter: NetworkLogging {
///     let minimumLevel = LogLevel.debug
///     func log(_ level: LogLevel, _ event: NetworkLogEvent) {
///         if event.kind == .response, let status = event.status { record(status, event.duration) }
///     }
/// }
/// ```
public struct NetworkLogEvent: Sendable, Equatable, CustomStringConvertible {
    /// Which event this is, in a set that may grow.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// The kind's stable name.
        public let name: String
        private init(_ name: String) { self.name = name }

        /// A request is about to be sent (every attempt and every redirect hop): ``method``, ``url``,
        /// ``headers``.
        public static let request = Kind("request")
        /// A response arrived: ``status``, ``url``, ``headers``, ``bodySize``, ``duration``.
        public static let response = Kind("response")
        /// The session follows a redirect: ``status``, ``url`` (from), ``location`` (to).
        public static let redirect = Kind("redirect")
        /// An attempt failed and the next one starts after ``delay``: ``attempt``, ``url``, ``error``.
        public static let retry = Kind("retry")
        /// The request failed: ``url``, ``error``.
        public static let failure = Kind("failure")

        /// The kind's name.
        public var description: String { name }
    }

    /// Which event this is.
    public let kind: Kind
    /// The request's method, for ``Kind/request``.
    public let method: String?
    /// The request's URL, redacted; for a ``Kind/redirect``, the URL redirected from.
    public let url: String
    /// The request's headers (``Kind/request``) or the response's (``Kind/response``), redacted; empty
    /// otherwise.
    public let headers: HTTPHeaders
    /// The response's status code, for ``Kind/response`` and ``Kind/redirect``.
    public let status: Int?
    /// The response body's size in bytes, for ``Kind/response``.
    public let bodySize: Int?
    /// How long the exchange took, for ``Kind/response``.
    public let duration: Duration?
    /// Where a ``Kind/redirect`` leads, redacted.
    public let location: String?
    /// The attempt that failed (1 for the first), for ``Kind/retry``.
    public let attempt: Int?
    /// How long the session waits before the next attempt, for ``Kind/retry``.
    public let delay: Duration?
    /// The error, with its response headers redacted, for ``Kind/retry`` and ``Kind/failure``.
    public let error: NetworkError?

    private init(
        kind: Kind, method: String? = nil, url: String, headers: HTTPHeaders = HTTPHeaders(), status: Int? = nil,
        bodySize: Int? = nil, duration: Duration? = nil, location: String? = nil, attempt: Int? = nil,
        delay: Duration? = nil, error: NetworkError? = nil
    ) {
        self.kind = kind
        self.method = method
        self.url = url
        self.headers = headers
        self.status = status
        self.bodySize = bodySize
        self.duration = duration
        self.location = location
        self.attempt = attempt
        self.delay = delay
        self.error = error
    }

    /// A request is about to be sent (every attempt and every redirect hop).
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - url: The URL, redacted.
    ///   - headers: The headers, redacted.
    public static func request(method: String, url: String, headers: HTTPHeaders) -> NetworkLogEvent {
        NetworkLogEvent(kind: .request, method: method, url: url, headers: headers)
    }

    /// A response arrived.
    /// - Parameters:
    ///   - status: The status code.
    ///   - url: The URL, redacted.
    ///   - headers: The response headers, redacted.
    ///   - bodySize: The body's size in bytes.
    ///   - duration: How long the exchange took.
    public static func response(
        status: Int, url: String, headers: HTTPHeaders, bodySize: Int, duration: Duration
    ) -> NetworkLogEvent {
        NetworkLogEvent(
            kind: .response, url: url, headers: headers, status: status, bodySize: bodySize, duration: duration)
    }

    /// The session follows a redirect.
    /// - Parameters:
    ///   - status: The redirect's status code.
    ///   - from: The URL redirected from, redacted.
    ///   - to: The URL redirected to, redacted.
    public static func redirect(status: Int, from: String, to: String) -> NetworkLogEvent {
        NetworkLogEvent(kind: .redirect, url: from, status: status, location: to)
    }

    /// Attempt `attempt` failed with `error`; the next one starts after `delay`.
    /// - Parameters:
    ///   - attempt: The attempt that failed.
    ///   - url: The URL, redacted.
    ///   - delay: The wait before the next attempt.
    ///   - error: The attempt's error, redacted.
    public static func retry(attempt: Int, url: String, delay: Duration, error: NetworkError) -> NetworkLogEvent {
        NetworkLogEvent(kind: .retry, url: url, attempt: attempt, delay: delay, error: error)
    }

    /// The request failed.
    /// - Parameters:
    ///   - url: The URL, redacted.
    ///   - error: The error, redacted.
    public static func failure(url: String, error: NetworkError) -> NetworkLogEvent {
        NetworkLogEvent(kind: .failure, url: url, error: error)
    }

    /// A one-line summary.
    public var description: String {
        switch kind {
        case .request:
            let list = headers.map { "\($0.name): \($0.value)" }.joined(separator: ", ")
            return "→ \(method ?? "GET") \(url) [\(list)]"
        case .response:
            return "← \(status ?? 0) \(url) (\(bodySize ?? 0) bytes, \(duration ?? .zero))"
        case .redirect:
            return "↪ \(status ?? 0) \(url) → \(location ?? "")"
        case .retry:
            let wait = delay ?? .zero
            return "↻ \(url): attempt \(attempt ?? 0) failed (\(error?.description ?? "")); retrying in \(wait)"
        default:
            return "✗ \(url): \(error?.description ?? "")"
        }
    }

    /// Header names whose values are never logged with ``LogRedaction/standard``.
    public static let redactedHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]
}

/// What the session hides in log events: values of secret headers, values of query items with secret names,
/// and (always) user info in URLs. Names compare case-insensitively. A hidden header value reads
/// `<redacted>`; in a URL, hidden user info and query values read `redacted`
/// (`https://redacted@api.example.com/posts?token=redacted&page=2`). The URLs in URL-valued headers
/// (`Location`, `Content-Location`, `Referer`, and each target of `Link`) are redacted the same way, and so
/// are the response headers inside the ``NetworkError`` of `.retry` and `.failure` events.
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
        headers: NetworkLogEvent.redactedHeaders,
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

/// Receives the session's log events. The default, ``SilentLogger``, drops them.
public protocol NetworkLogging: Sendable {
    /// Events below this level are not built or delivered.
    var minimumLevel: LogLevel { get }
    /// Receives one event.
    /// - Parameters:
    ///   - level: The event's level.
    ///   - event: The event.
    func log(_ level: LogLevel, _ event: NetworkLogEvent)
}

/// Logs nothing.
public struct SilentLogger: NetworkLogging {
    /// Creates the logger.
    public init() {}
    /// Above every level, so no event is built.
    public var minimumLevel: LogLevel { .error }
    /// Drops the event.
    public func log(_ level: LogLevel, _ event: NetworkLogEvent) {}
}

/// Writes one line per event to standard error.
public struct StandardErrorLogger: NetworkLogging {
    /// Events below this level are dropped.
    public var minimumLevel: LogLevel

    /// Creates the logger.
    /// - Parameter minimumLevel: Events below this level are dropped.
    public init(minimumLevel: LogLevel = .debug) { self.minimumLevel = minimumLevel }

    /// Writes the event.
    public func log(_ level: LogLevel, _ event: NetworkLogEvent) {
        guard level >= minimumLevel else { return }
        FileHandle.standardError.write(Data("[ResourceKit] \(level): \(event)\n".utf8))
    }
}
