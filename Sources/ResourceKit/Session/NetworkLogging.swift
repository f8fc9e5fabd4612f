public import Foundation

/// How important a log event is.
public enum LogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    /// Every request and response.
    case debug
    /// Notable events.
    case info
    /// Failures the caller will see.
    case error

    /// Compares by importance.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name.
    public var description: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .error: "error"
        }
    }
}

/// What the session reports to its logger, already redacted by the session's ``LogRedaction``.
public enum NetworkLogEvent: Sendable, Equatable, CustomStringConvertible {
    /// A request is about to be sent (every attempt and every redirect hop).
    case request(method: String, url: String, headers: HTTPHeaders)
    /// A response arrived.
    case response(status: Int, url: String, headers: HTTPHeaders, bodySize: Int, duration: Duration)
    /// The session follows a redirect.
    case redirect(status: Int, from: String, to: String)
    /// Attempt `attempt` failed with `error`; the next one starts after `delay`.
    case retry(attempt: Int, url: String, delay: Duration, error: NetworkError)
    /// The request failed.
    case failure(url: String, error: NetworkError)

    /// A one-line summary.
    public var description: String {
        switch self {
        case .request(let method, let url, let headers):
            let list = headers.map { "\($0.name): \($0.value)" }.joined(separator: ", ")
            return "→ \(method) \(url) [\(list)]"
        case .response(let status, let url, _, let size, let duration):
            return "← \(status) \(url) (\(size) bytes, \(duration))"
        case .redirect(let status, let from, let to):
            return "↪ \(status) \(from) → \(to)"
        case .retry(let attempt, let url, let delay, let error):
            return "↻ \(url): attempt \(attempt) failed (\(error)); retrying in \(delay)"
        case .failure(let url, let error):
            return "✗ \(url): \(error)"
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
        switch error {
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

    /// The URL as text, with user info and secret query values replaced.
    public func redact(_ url: URL?) -> String {
        guard let url else { return "" }
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
