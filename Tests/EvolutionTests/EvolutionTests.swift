import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client module, as a user's app is: no `@testable`, only the public API. It switches without a
/// `default` over every public enum the evolution policy (CONTRIBUTING.md) keeps exhaustive, and uses every
/// extensible type the documented way, so a change that breaks either fails to compile here.
@Suite struct EvolutionTests {
    // MARK: The closed sets: exhaustive switches, no `default`.

    func describe(_ state: ResourceState<Int>) -> String {
        switch state {
        case .idle: "idle"
        case .loading(let previous): "loading \(String(describing: previous))"
        case .available(let value): "available \(value)"
        case .failure(let error, let previous): "failure \(error.code) \(String(describing: previous))"
        }
    }

    func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .int(let number): "\(number)"
        case .double(let number): "\(number)"
        case .string(let text): text
        case .array(let items): "[\(items.count)]"
        case .object(let fields): "{\(fields.count)}"
        }
    }

    @Test func theClosedEnumsSwitchExhaustively() {
        #expect(describe(ResourceState<Int>.idle) == "idle")
        #expect(describe(.failure(.timeout, previous: 1)) == "failure timeout Optional(1)")
        #expect(describe(JSONValue.array([.null, .int(1)])) == "[2]")
    }

    // MARK: The extensible types: a switch over their kind needs a `default`; they compare with `==`.

    /// What an app does with an error: switch over its code, read the details the code carries.
    func advice(for error: NetworkError) -> String {
        switch error.code {
        case .httpStatus where error.statusCode == 404: "gone"
        case .httpStatus, .server: "refused \(error.statusCode ?? 0)"
        case .transport, .timeout: "offline"
        case .cancelled: "cancelled"
        case .decoding: "update the app: \(error.decodingFailure?.codingPath ?? "")"
        default: "other \(error.code)"
        }
    }

    @Test func errorsAreSwitchedOverByCode() {
        #expect(advice(for: .httpStatus(code: 404, body: Data())) == "gone")
        #expect(advice(for: .server(ServerError(status: 400, message: "bad"))) == "refused 400")
        #expect(advice(for: .transport(code: .notConnectedToInternet, message: "")) == "offline")
        #expect(advice(for: NetworkError(CancellationError())) == "cancelled")
        #expect(advice(for: .decoding(type: "Post", codingPath: "title", message: "")) == "update the app: title")
        #expect(advice(for: .superseded) == "other superseded")
        #expect(NetworkError.transport(code: .timedOut, message: "x").transportCode == .timedOut)
        #expect(NetworkError.authenticationFailed(.timeout).underlyingError == .timeout)
        #expect(NetworkError.httpStatus(code: 500, body: Data("oops".utf8)).message == "oops")
    }

    @Test func aTypedCatchMatchesAnErrorByValue() async {
        let stub = StubTransport()
        stub.stub(.get, "/gone", status: 404)
        let session = NetworkSession(baseURL: "http://test.local", transport: stub)
        do {
            try await session.send(Endpoint(.get, "gone"))
            Issue.record("a 404 throws")
        } catch .httpStatus(code: 404, body: Data()) {
            // `catch` with a value: errors are Equatable.
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func errorCodesEncodeAsTheirNames() throws {
        let data = try JSONEncoder().encode([NetworkError.Code.httpStatus, .timeout])
        #expect(String(decoding: data, as: UTF8.self) == #"["httpStatus","timeout"]"#)
        #expect(try JSONDecoder().decode([NetworkError.Code].self, from: data) == [.httpStatus, .timeout])
    }

    final class Recorder: NetworkLogging, Sendable {
        let minimumLevel = LogLevel.debug
        private let lock = NSLock()
        nonisolated(unsafe) private var recorded: [Int] = []
        var statuses: [Int] { lock.withLock { recorded } }
        func log(_ level: LogLevel, _ event: DiagnosticEvent) {
            switch event.kind {
            case .requestFinished: lock.withLock { recorded.append(event.status ?? 0) }
            case .requestStarted, .redirect, .retry, .requestFailed: break
            default: break
            }
        }
    }

    @Test func logEventsAreTaggedWithAKind() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/posts", status: 204)
        let recorder = Recorder()
        let session = NetworkSession(baseURL: "http://test.local", transport: stub, logger: recorder)
        try await session.send(Endpoint(.get, "posts"))
        #expect(recorder.statuses == [204])
        var event = DiagnosticEvent(.retry)
        event.attempt = 1
        event.error = .timeout
        #expect(event.kind == .retry && event.attempt == 1 && event.error == .timeout)
        #expect(LogLevel.debug < .info && LogLevel.info < .error)
    }

    @Test func policiesAndOptionsAreValues() {
        let policies: [ReadPolicy] = [.always, .skipIfLoaded, .skipIfFresh, .staleWhileRevalidate(maxAge: .seconds(5))]
        #expect(policies.filter { $0 == .skipIfFresh(maxAge: nil) }.count == 1)
        #expect(ReadPolicy.staleWhileRevalidate(maxAge: .seconds(5)).maxAge == .seconds(5))
        #expect(StateBuffering.latest != .everyChange)
        #expect(ListPlacement.omitted != .start)
        #expect(RequestBody.data(Data([1]), contentType: "a/b") == .data(Data([1]), contentType: "a/b"))
        #expect(RedirectPolicy.never != .follow)
        #expect(InMemoryBackend.Fault.slowBody(.seconds(1)) == .slowBody(.seconds(1)))
        #expect(HTTPMethod.get == "GET")
    }

    // MARK: The policy itself: no public enum outside the closed sets.

    /// Every `public enum` in the library's sources: the closed sets (whose every case is named here) and
    /// caseless namespaces. A new public enum fails this test until CONTRIBUTING.md's policy allows it.
    @Test func noPublicEnumOutsideTheClosedSets() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources")
            .standardized
        let files = try #require(FileManager.default.enumerator(atPath: root.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        var found: [String] = []
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "enum"), index > 0,
                    words[..<index].contains("public"), index + 1 < words.count
                else { continue }
                found.append(String(words[index + 1].prefix { $0.isLetter || $0.isNumber }))
            }
        }
        #expect(found.sorted() == ["JSONValue", "LinkHeader", "ResourceState"])
    }
}
