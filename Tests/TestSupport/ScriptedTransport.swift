package import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import Foundation
    package import FoundationNetworking
#else
    package import Foundation
#endif

/// Answers requests in order from a script, one answer per request, and records them. After the script
/// ends, it answers with its last entry. An answer may depend on the request (`respond`).
package final class ScriptedTransport: HTTPTransport {
    /// One scripted answer.
    package struct Answer: Sendable {
        package let respond: @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse
    }

    private let script: [Answer]
    private let requestLog = Watched<[URLRequest]>([])

    package init(_ script: [Answer]) {
        precondition(!script.isEmpty, "a script needs at least one answer")
        self.script = script
    }

    package var requests: [URLRequest] { requestLog.value }
    package var requestCount: Int { requests.count }

    package func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let index = requestLog.withLock { log in
            log.append(request)
            return log.count - 1
        }
        return try await script[min(index, script.count - 1)].respond(request)
    }

}

extension ScriptedTransport.Answer {
    package static func status(_ code: Int, json: String = "{}", headers: HTTPHeaders = [:]) -> Self {
        Self { request in
            var headers = headers
            headers["Content-Type"] = "application/json"
            return HTTPResponse(statusCode: code, headers: headers, body: Data(json.utf8), url: request.url)
        }
    }

    package static func failure(_ error: NetworkError) -> Self {
        Self { _ async throws(NetworkError) -> HTTPResponse in throw error }
    }

    package static func respond(_ body: @escaping @Sendable (URLRequest) async throws(NetworkError) -> HTTPResponse)
        -> Self
    {
        Self(respond: body)
    }
}

/// Keeps every event the session logs, in order, and the level of each.
package final class EventCollector: NetworkLogging {
    private let log = Locked<[(LogLevel, DiagnosticEvent)]>([])
    package let minimumLevel: LogLevel
    package init(minimumLevel: LogLevel = .debug) { self.minimumLevel = minimumLevel }
    package var events: [DiagnosticEvent] { log.withLock { $0.map(\.1) } }
    package var levels: [LogLevel] { log.withLock { $0.map(\.0) } }
    /// The events about requests, in order: no state changes of objects.
    package var requestEvents: [DiagnosticEvent] { events.filter { $0.requestID != nil } }
    package func log(_ level: LogLevel, _ event: DiagnosticEvent) { log.withLock { $0.append((level, event)) } }
}

/// A session on `transport`, at `http://test.local/api`.
package func makeSession(_ transport: any HTTPTransport, logger: any NetworkLogging = SilentLogger()) -> NetworkSession
{
    NetworkSession(baseURL: "http://test.local/api", transport: transport, logger: logger)
}
