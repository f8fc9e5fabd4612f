import Foundation
import ResourceKitHTTP
import Testing

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
