import Foundation

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

/// What the session reports to its logger. Secret header values are already redacted.
public enum NetworkLogEvent: Sendable, Equatable, CustomStringConvertible {
    /// A request is about to be sent.
    case request(method: String, url: String, headers: HTTPHeaders)
    /// A response arrived.
    case response(status: Int, url: String, headers: HTTPHeaders, bodySize: Int, duration: Duration)
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
        case .failure(let url, let error):
            return "✗ \(url): \(error)"
        }
    }

    /// Header names whose values are never logged.
    public static let redactedHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    static func redact(_ headers: HTTPHeaders) -> HTTPHeaders {
        var result = HTTPHeaders()
        for field in headers {
            result[field.name] = redactedHeaders.contains(field.name.lowercased()) ? "<redacted>" : field.value
        }
        return result
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
