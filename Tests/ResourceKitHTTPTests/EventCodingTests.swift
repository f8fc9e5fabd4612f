import Foundation
import Testing

@testable import ResourceKitHTTP

/// An event's kind and a log level are written as their names, the stable part a log file or a devtool keeps,
/// and read back from them; a name this release does not know fails to decode rather than becoming another.
@Suite struct EventCodingTests {
    static let kinds: [DiagnosticEvent.Kind] = [
        .requestStarted, .requestFinished, .retry, .credentialRefresh, .redirect, .requestFailed,
    ]
    /// The kinds ResourceKit declares, which this module does not name in code.
    static let resourceKindNames = ["stateChanged", "cacheHit", "joined", "operationFinished", "storeNews"]

    @Test func everyKindIsWrittenAsItsNameAndReadBack() throws {
        let names = Self.kinds.map(\.name)
        #expect(Set(names).count == Self.kinds.count)
        let data = try JSONEncoder().encode(Self.kinds)
        #expect(try JSONDecoder().decode([String].self, from: data) == names)
        #expect(try JSONDecoder().decode([DiagnosticEvent.Kind].self, from: data) == Self.kinds)
        #expect(
            String(decoding: try JSONEncoder().encode([DiagnosticEvent.Kind.requestFailed]), as: UTF8.self)
                == #"["requestFailed"]"#)
    }

    /// A log written by an app that uses resources decodes in a process that has only the HTTP layer, or has
    /// not yet emitted a resource's event: ResourceKit's kinds keep their names and numbers here.
    @Test func resourceKitsKindsDecodeWithoutResourceKit() throws {
        let data = try JSONEncoder().encode(Self.resourceKindNames)
        let kinds = try JSONDecoder().decode([DiagnosticEvent.Kind].self, from: data)
        #expect(kinds.map(\.name) == Self.resourceKindNames)
        #expect(Set(kinds).count == Self.resourceKindNames.count)
        #expect(Set(kinds).isDisjoint(with: Self.kinds))
        #expect(try JSONEncoder().encode(kinds) == data)
    }

    /// The level a logger receives a kind at: an added kind's is the one it was first made with (a second
    /// declaration of the name does not change it), and the request kinds' are fixed.
    @Test func aLoggerReceivesAnAddedKindAtTheLevelItWasFirstGiven() {
        #expect(DiagnosticEvent.Kind("tests.notable", level: .info).level == .info)
        #expect(DiagnosticEvent.Kind("tests.notable", level: .debug).level == .info)
        #expect(DiagnosticEvent.Kind("tests.alarming", level: .error).level == .error)
        #expect(DiagnosticEvent.Kind.requestFailed.level == .error)
        #expect(DiagnosticEvent.Kind.retry.level == .info)
        #expect(DiagnosticEvent.Kind.credentialRefresh.level == .info)
        #expect(DiagnosticEvent.Kind.requestStarted.level == .debug)
    }

    @Test func everyLevelIsWrittenAsItsNameAndReadBack() throws {
        let levels: [LogLevel] = [.debug, .info, .error]
        let data = try JSONEncoder().encode(levels)
        #expect(String(decoding: data, as: UTF8.self) == #"["debug","info","error"]"#)
        #expect(try JSONDecoder().decode([LogLevel].self, from: data) == levels)
    }

    @Test(arguments: [#"["kind11"]"#, #"["StateChanged"]"#, #"[""]"#, #"[4]"#])
    func anUnknownKindFailsToDecode(_ json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([DiagnosticEvent.Kind].self, from: Data(json.utf8))
        }
    }

    @Test(arguments: [#"["warning"]"#, #"["level 3"]"#, #"["Debug"]"#, #"[0]"#])
    func anUnknownLevelFailsToDecode(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([LogLevel].self, from: Data(json.utf8)) }
    }
}
