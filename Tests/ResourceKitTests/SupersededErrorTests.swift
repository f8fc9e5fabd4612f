import Foundation
import ResourceKit
import Testing

/// `superseded` is ResourceKit's code, added to the HTTP layer's extensible set: it compares, switches, encodes
/// and describes itself as a code of the HTTP layer does.
@Suite struct SupersededErrorTests {
    @Test func itIsACodeLikeAnyOther() throws {
        let error = NetworkError.superseded
        #expect(error.code == .superseded)
        #expect(error.code.name == "superseded")
        #expect(error == .superseded)
        #expect(error != .cancelled)
        #expect(error.message.isEmpty)
        #expect(error.description == "superseded")
        #expect(error.statusCode == nil && error.body == nil && !error.isUnreachable)
        let data = try JSONEncoder().encode(error.code)
        #expect(String(decoding: data, as: UTF8.self) == #""superseded""#)
        #expect(try JSONDecoder().decode(NetworkError.Code.self, from: data) == .superseded)
        var matched = false
        do throws(NetworkError) {
            throw NetworkError.superseded
        } catch .superseded {
            matched = true
        } catch {}
        #expect(matched)
        switch error.code {
        case .superseded: break
        default: Issue.record("\(error.code) is not superseded")
        }
    }
}
