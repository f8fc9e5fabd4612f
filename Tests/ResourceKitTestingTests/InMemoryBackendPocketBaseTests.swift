import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

/// A placeholder type whose `placeholders(count:)` returns copies of one value, as the protocol's default does.
struct Tag: Codable, Sendable, Equatable, Placeholdable {
    var id: String
    var name: String
    static var placeholder: Tag { Tag(id: "tag", name: "Placeholder") }
}

/// InMemoryBackend answers what PocketBase 0.40.6 answers for the same requests. The expected bodies below
/// were recorded from a PocketBase 0.40.6 started by `Scripts/pocketbase start`.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendPocketBaseTests {
    let session: NetworkSession
    let backend: InMemoryBackend

    init() {
        backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
        backend.addCollection("notes")
        session = NetworkSession(baseURL: "http://backend.test/api/collections", transport: backend)
    }

    func object(_ data: Data) throws -> [String: JSONValue] {
        try #require(try JSONDecoder().decode(JSONValue.self, from: data).objectValue)
    }

    func send(_ endpoint: Endpoint) async throws -> HTTPResponse {
        // The raw answer, whatever its status: validation would turn a 4xx into an error.
        try await NetworkSession(
            baseURL: "http://backend.test/api/collections", validation: ValidationClosure { _ in },
            transport: backend
        ).response(for: endpoint)
    }

    @Test func generatedIDsNeverOverwriteSeededRecords() async throws {
        try backend.seed(
            [Note(id: "000000000000001", title: "one"), Note(id: "000000000000002", title: "two")], into: "notes")
        let created: Note = try await session.send(
            Endpoint(.post, "notes/records", body: .json(["title": "three"])))
        #expect(!["000000000000001", "000000000000002"].contains(created.id))
        #expect(try backend.records(Note.self, in: "notes").map(\.title) == ["one", "two", "three"])
    }

    @Test func integerIDsAreKept() async throws {
        struct Numbered: Codable, Equatable { var id: Int; var title: String }
        let ids = try backend.seed([Numbered(id: 42, title: "answer")], into: "numbered")
        #expect(ids == ["42"])
        let read: Numbered = try await session.send(Endpoint(.get, "numbered/records").appending(id: 42))
        #expect(read == Numbered(id: 42, title: "answer"))
    }

    @Test func placeholdersThatAreCopiesEachGetTheirOwnRecord() throws {
        let ids = try backend.seedPlaceholders(Tag.self, count: 5, into: "tags")
        #expect(Set(ids).count == 5)
        #expect(backend.records(in: "tags").count == 5)
    }

    @Test func recordsCarryPocketBasesSystemFields() async throws {
        try backend.seed([Note(id: "a", title: "one")], into: "notes")
        let read = try object(try await send(Endpoint(.get, "notes/records/a")).body)
        #expect(read["collectionName"] == .string("notes"))
        guard case .string(let collectionID) = read["collectionId"] else {
            Issue.record("no collectionId in \(read)")
            return
        }
        #expect(collectionID.hasPrefix("pbc_"))
        let page = try object(try await send(Endpoint(.get, "notes/records")).body)
        let first = try #require(page["items"].flatMap { if case .array(let items) = $0 { items.first } else { nil } })
        #expect(first.objectValue?["collectionId"] == .string(collectionID))
    }

    @Test func createWithATakenIDIsValidationNotUnique() async throws {
        try backend.seed([Note(id: "taken0000000001", title: "one")], into: "notes")
        let response = try await send(
            Endpoint(.post, "notes/records", body: .json(["id": "taken0000000001", "title": "dup"])))
        #expect(response.statusCode == 400)
        let recorded =
            #"{"data":{"id":{"code":"validation_not_unique","message":"Value must be unique."}},"#
            + #""message":"Failed to create record.","status":400}"#
        #expect(try object(response.body) == object(Data(recorded.utf8)))
        #expect(try backend.records(Note.self, in: "notes") == [Note(id: "taken0000000001", title: "one")])
    }

    @Test(arguments: ["0", "-3"])
    func perPageOfZeroOrLessIsThirty(perPage: String) async throws {
        try backend.seed((0..<40).map { Note(id: "n\($0)", title: "\($0)") }, into: "notes")
        let page = try object(try await send(Endpoint(.get, "notes/records", query: ["perPage": perPage])).body)
        #expect(page["perPage"] == .int(30))
        #expect(page["totalPages"] == .int(2))
    }

    @Test func nonNumericPageIsA400() async throws {
        let response = try await send(Endpoint(.get, "notes/records", query: ["page": "abc"]))
        #expect(response.statusCode == 400)
        let recorded = #"{"data":{},"message":"Something went wrong while processing your request.","status":400}"#
        #expect(try object(response.body) == object(Data(recorded.utf8)))
    }

    @Test func unknownCollectionIsPocketBases404() async throws {
        let response = try await send(Endpoint(.get, "nope/records"))
        #expect(response.statusCode == 404)
        let recorded = #"{"data":{},"message":"Missing collection context.","status":404}"#
        #expect(try object(response.body) == object(Data(recorded.utf8)))
    }
}
