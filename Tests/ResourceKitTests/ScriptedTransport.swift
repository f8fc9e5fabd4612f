import Foundation
import ResourceKit
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers requests in order from a script, one answer per request, and records them. After the script
/// ends, it answers with its last entry. An answer may depend on the request (`respond`).
final class ScriptedTransport: HTTPTransport {
    /// One scripted answer.
    struct Answer: Sendable {
        let respond: @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse
    }

    private let script: [Answer]
    private let requestLog = Watched<[URLRequest]>([])

    init(_ script: [Answer]) {
        precondition(!script.isEmpty, "a script needs at least one answer")
        self.script = script
    }

    var requests: [URLRequest] { requestLog.value }
    var requestCount: Int { requests.count }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let index = requestLog.withLock { log in
            log.append(request)
            return log.count - 1
        }
        return try await script[min(index, script.count - 1)].respond(request)
    }

}

extension ScriptedTransport.Answer {
    static func status(_ code: Int, json: String = "{}", headers: HTTPHeaders = [:]) -> Self {
        Self { request in
            var headers = headers
            headers["Content-Type"] = "application/json"
            return HTTPResponse(statusCode: code, headers: headers, body: Data(json.utf8), url: request.url)
        }
    }

    static func failure(_ error: NetworkError) -> Self {
        Self { _ async throws(NetworkError) -> HTTPResponse in throw error }
    }

    static func respond(_ body: @escaping @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse) -> Self {
        Self(respond: body)
    }
}

/// Keeps every event the session logs, in order, and the level of each.
final class EventCollector: NetworkLogging {
    private let log = Locked<[(LogLevel, DiagnosticEvent)]>([])
    let minimumLevel: LogLevel
    init(minimumLevel: LogLevel = .debug) { self.minimumLevel = minimumLevel }
    var events: [DiagnosticEvent] { log.withLock { $0.map(\.1) } }
    var levels: [LogLevel] { log.withLock { $0.map(\.0) } }
    /// The events about requests, in order: no state changes of objects.
    var requestEvents: [DiagnosticEvent] { events.filter { $0.requestID != nil } }
    func log(_ level: LogLevel, _ event: DiagnosticEvent) { log.withLock { $0.append((level, event)) } }
}
