import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// Paging parameters and ids as PocketBase 0.40.6 answers them: the statuses and fields below were asked of a
/// PocketBase 0.40.6 started by `Scripts/pocketbase start`.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendParityTests {
    let backend: InMemoryBackend

    init() throws {
        backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
        backend.addCollection("notes")
        try backend.seed((0..<5).map { Note(id: "n\($0)", title: "\($0)") }, into: "notes")
    }

    func send(_ endpoint: Endpoint) async throws -> HTTPResponse {
        try await NetworkSession(
            baseURL: "http://backend.test/api/collections", validation: ValidationClosure { _ in },
            transport: backend
        ).response(for: endpoint)
    }

    func envelope(_ query: [String: String]) async throws -> (status: Int, fields: [String: JSONValue]) {
        let response = try await send(Endpoint(.get, "notes/records", query: query))
        var fields = try #require(try JSONDecoder().decode(JSONValue.self, from: response.body).objectValue)
        fields["items"] = nil
        return (response.statusCode, fields)
    }

    /// An empty value is no value.
    @Test func emptyPagingValuesAreNone() async throws {
        let page = try await envelope(["page": "", "perPage": "1"])
        #expect(page.status == 200)
        #expect(page.fields == ["page": .int(1), "perPage": .int(1), "totalItems": .int(5), "totalPages": .int(5)])
        #expect(try await envelope(["perPage": ""]).fields["perPage"] == .int(30))
        #expect(try await envelope(["skipTotal": ""]).fields["totalItems"] == .int(5))
    }

    /// A page or perPage that is not a number, or that 64 bits do not hold, is PocketBase's 400.
    @Test(arguments: [
        ["perPage": "abc"], ["page": "abc"], ["page": "99999999999999999999"], ["perPage": "99999999999999999999"],
        ["skipTotal": "yes"],
    ])
    func badPagingValuesAreA400(query: [String: String]) async throws {
        let answer = try await envelope(query)
        #expect(answer.status == 400)
        #expect(
            answer.fields == [
                "data": .object([:]), "message": .string("Something went wrong while processing your request."),
                "status": .int(400),
            ])
    }

    /// `skipTotal` takes Go's booleans.
    @Test(arguments: ["1", "t", "T", "TRUE", "true", "True"])
    func skipTotalTakesEveryTrue(value: String) async throws {
        let page = try await envelope(["skipTotal": value])
        #expect(page.fields["totalItems"] == .int(-1))
        #expect(page.fields["totalPages"] == .int(-1))
    }

    @Test(arguments: ["0", "f", "F", "FALSE", "false", "False"])
    func skipTotalTakesEveryFalse(value: String) async throws {
        #expect(try await envelope(["skipTotal": value]).fields["totalItems"] == .int(5))
    }

    /// A record seeded with an integer id keeps it a number through a merge and a replacement.
    @Test func anIntegerIDStaysANumberThroughWrites() async throws {
        struct Counter: Codable, Equatable {
            var id: Int
            var count: Int
        }
        try backend.seed([Counter(id: 7, count: 1)], into: "notes")
        var patched = try await send(Endpoint(.patch, "notes/records/7", body: .json(["count": 2])))
        #expect(try JSONDecoder().decode(Counter.self, from: patched.body) == Counter(id: 7, count: 2))
        patched = try await send(Endpoint(.put, "notes/records/7", body: .json(["count": 3])))
        #expect(try JSONDecoder().decode(Counter.self, from: patched.body) == Counter(id: 7, count: 3))
        let read = try await send(Endpoint(.get, "notes/records/7"))
        #expect(try JSONDecoder().decode(Counter.self, from: read.body) == Counter(id: 7, count: 3))
    }

    /// A count below 1 seeds nothing, whatever the type's `placeholders(count:)` does with it.
    @Test func seedingPlaceholdersClampsTheCount() throws {
        struct Strict: Codable, Placeholdable {
            var id: String
            static var placeholder: Strict { Strict(id: "") }
            static func placeholders(count: Int) -> [Strict] { (0..<count).map { Strict(id: "s\($0)") } }
        }
        #expect(try backend.seedPlaceholders(Strict.self, count: -3, into: "strict").isEmpty)
        #expect(try backend.seedPlaceholders(Strict.self, count: 2, into: "strict").count == 2)
    }
}
