import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `InMemoryBackend` answers the preconditions of a write as RFC 9110 §13.2.2 says (`If-Match` by strong
/// comparison, then `If-Unmodified-Since`), with `412` and the current record, and `428` when told to require
/// them: what an app's conflict handling is tested against.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendPreconditionTests {
    let backend = InMemoryBackend(basePath: "/api")

    init() throws {
        backend.addCollection("notes")
        try backend.seed([Note(id: "1", title: "First"), Note(id: "2", title: "Second")], into: "notes")
    }

    /// Sends a request straight to the backend, as a transport would.
    func send(
        _ method: String, _ id: String = "1", title: String? = nil, headers: [String: String] = [:]
    ) async throws -> HTTPResponse {
        var request = URLRequest(url: URL(string: "http://backend.test/api/notes/\(id)")!)
        request.httpMethod = method
        if let title {
            request.httpBody = try JSONEncoder().encode(["title": title])
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await backend.send(request)
    }

    func title(_ id: String = "1") throws -> String? {
        try backend.records(Note.self, in: "notes").first { $0.id == id }?.title
    }

    @Test func aWriteWhoseIfMatchNamesTheCurrentTagIsAppliedAndAnswersTheNewValidators() async throws {
        let read = try await send("GET")
        let tag = try #require(read.headers["ETag"])
        let written = try await send("PATCH", title: "Edited", headers: ["If-Match": tag])
        #expect(written.statusCode == 200)
        #expect(try title() == "Edited")
        let newTag = try #require(written.headers["ETag"])
        #expect(newTag != tag)
        // The write's validators are those a read gives now.
        let again = try await send("GET")
        #expect(again.headers["ETag"] == newTag)
        #expect(again.headers["Last-Modified"] == written.headers["Last-Modified"])
    }

    @Test(arguments: ["PATCH", "PUT", "DELETE"])
    func aWriteBasedOnAnOlderVersionIsRefusedWithTheCurrentRecord(method: String) async throws {
        let stale = try #require(try await send("GET").headers["ETag"])
        let other = try await send("PATCH", title: "Someone else's", headers: ["If-Match": stale])
        #expect(other.statusCode == 200)
        let refused = try await send(method, title: method == "DELETE" ? nil : "Mine", headers: ["If-Match": stale])
        #expect(refused.statusCode == 412)
        // The current record, with its validators, so that a client can show "theirs".
        let current = try JSONDecoder().decode(Note.self, from: refused.body)
        #expect(current == Note(id: "1", title: "Someone else's"))
        #expect(refused.headers["ETag"] == other.headers["ETag"])
        #expect(refused.headers["Last-Modified"] == other.headers["Last-Modified"])
        #expect(try title() == "Someone else's")
    }

    @Test func ifMatchComparesStrongly() async throws {
        let tag = try #require(try await send("GET").headers["ETag"])
        #expect(try await send("PATCH", title: "Weak", headers: ["If-Match": "W/" + tag]).statusCode == 412)
        #expect(try await send("PATCH", title: "Listed", headers: ["If-Match": "\"nope\", \(tag)"]).statusCode == 200)
        #expect(try title() == "Listed")
        #expect(try await send("PATCH", title: "Any", headers: ["If-Match": "*"]).statusCode == 200)
        #expect(try title() == "Any")
    }

    @Test func aConditionalWriteToARecordThatIsGoneIsRefusedNotNotFound() async throws {
        let tag = try #require(try await send("GET", "2").headers["ETag"])
        #expect(try await send("DELETE", "2").statusCode == 204)
        for headers in [["If-Match": tag], ["If-Match": "*"]] {
            let refused = try await send("PATCH", "2", title: "Back?", headers: headers)
            #expect(refused.statusCode == 412)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("no longer exists"))
        }
        // `If-Unmodified-Since` is ignored for a record with no date: the write finds no record.
        let date = "Sat, 01 Jan 2000 00:00:00 GMT"
        #expect(try await send("PATCH", "2", title: "Back?", headers: ["If-Unmodified-Since": date]).statusCode == 404)
        #expect(try backend.records(Note.self, in: "notes").map(\.id) == ["1"])
    }

    @Test func ifUnmodifiedSinceRefusesAWriteToANewerRecordAndIgnoresABadDate() async throws {
        let read = try await send("GET")
        let date = try #require(read.headers["Last-Modified"])
        #expect(try await send("PATCH", title: "On time", headers: ["If-Unmodified-Since": date]).statusCode == 200)
        // The record is newer now than the date the client read.
        let late = try await send("PATCH", title: "Late", headers: ["If-Unmodified-Since": date])
        #expect(late.statusCode == 412)
        #expect(try JSONDecoder().decode(Note.self, from: late.body).title == "On time")
        // Not one HTTP-date: ignored, as RFC 9110 §13.1.4 says.
        #expect(
            try await send("PATCH", title: "Ignored", headers: ["If-Unmodified-Since": "yesterday"]).statusCode == 200)
        #expect(try title() == "Ignored")
    }

    @Test func ifMatchDecidesWithoutIfUnmodifiedSince() async throws {
        let read = try await send("GET")
        let tag = try #require(read.headers["ETag"])
        let epoch = "Sat, 01 Jan 2000 00:00:00 GMT"
        // A matching tag with a date that alone would refuse: the tag decides.
        let applied = try await send(
            "PATCH", title: "By tag", headers: ["If-Match": tag, "If-Unmodified-Since": epoch])
        #expect(applied.statusCode == 200)
        // A stale tag with a date that alone would allow: the tag decides.
        let future = "Fri, 01 Jan 2100 00:00:00 GMT"
        let refused = try await send("PATCH", title: "No", headers: ["If-Match": tag, "If-Unmodified-Since": future])
        #expect(refused.statusCode == 412)
        #expect(try title() == "By tag")
    }

    @Test func requiredPreconditionsRefuseAnUnconditionalWriteWith428() async throws {
        backend.requiresPreconditions = true
        for method in ["PATCH", "PUT", "DELETE"] {
            let refused = try await send(method, title: method == "DELETE" ? nil : "Blind")
            #expect(refused.statusCode == 428, "\(method)")
        }
        #expect(try title() == "First")
        // Reads and creates need none; a conditional write goes through.
        #expect(try await send("GET").statusCode == 200)
        var create = URLRequest(url: URL(string: "http://backend.test/api/notes")!)
        create.httpMethod = "POST"
        create.httpBody = Data(#"{"title":"New"}"#.utf8)
        create.setValue("application/json", forHTTPHeaderField: "Content-Type")
        #expect(try await backend.send(create).statusCode == 200)
        let date = try #require(try await send("GET").headers["Last-Modified"])
        #expect(try await send("PATCH", title: "Careful", headers: ["If-Unmodified-Since": date]).statusCode == 200)
        backend.requiresPreconditions = false
        #expect(try await send("PATCH", title: "Blind again").statusCode == 200)
    }

    @Test func aRefusedWriteIsNotRememberedForItsIdempotencyKey() async throws {
        let stale = try #require(try await send("GET").headers["ETag"])
        _ = try await send("PATCH", title: "Theirs")
        let key = ["Idempotency-Key": "change-1"]
        let refused = try await send("PATCH", title: "Mine", headers: key.merging(["If-Match": stale]) { $1 })
        #expect(refused.statusCode == 412)
        let current = try #require(refused.headers["ETag"])
        // Sent again on the server's version, with the same key: applied, not answered from the refusal.
        let applied = try await send("PATCH", title: "Mine", headers: key.merging(["If-Match": current]) { $1 })
        #expect(applied.statusCode == 200)
        #expect(try title() == "Mine")
        #expect(backend.idempotentRepeats == 0)
    }

    /// Seeded random writes with random preconditions against a model of the record: its value and version,
    /// and the tag and date a client holds. Every answer and the record after it match the model.
    @Test(arguments: 0..<5)
    func randomConditionalWritesMatchTheModel(seed: UInt64) async throws {
        // A linear congruential generator (Knuth's MMIX constants), high bits: replayable from the seed.
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        // What the model holds: the current title, and each version's tag and date as the server gave them.
        var title: String? = "First"
        var seen: [(tag: String, date: String)] = []
        let first = try await send("GET")
        seen.append((try #require(first.headers["ETag"]), try #require(first.headers["Last-Modified"])))
        for step in 0..<150 {
            let method = ["PATCH", "PUT", "DELETE", "GET"][Int(next() % 4)]
            var headers: [String: String] = [:]
            let pick = seen[Int(clamping: next() % UInt64(seen.count))]
            let isCurrent = title != nil && pick.tag == seen.last?.tag
            var expected: Int
            switch next() % 5 {
            case 0: expected = 0  // unconditional: decided below
            case 1:
                headers["If-Match"] = pick.tag
                expected = isCurrent ? 0 : 412
            case 2:
                headers["If-Match"] = "*"
                expected = title == nil ? 412 : 0
            case 3:
                headers["If-Unmodified-Since"] = pick.date
                expected = title != nil && !isCurrent && pick.date != seen.last?.date ? 412 : 0
            default:
                headers["If-Match"] = "W/" + pick.tag
                expected = 412
            }
            if method == "GET" { expected = title == nil ? 404 : 200 }
            if expected == 0 {
                if title == nil { expected = 404 } else { expected = method == "DELETE" ? 204 : 200 }
            }
            let newTitle = "t\(seed)-\(step)"
            let answer = try await send(
                method, title: method == "DELETE" || method == "GET" ? nil : newTitle, headers: headers)
            #expect(answer.statusCode == expected, "seed \(seed) step \(step): \(method) \(headers)")
            guard answer.statusCode == expected else { return }
            switch (method, expected) {
            case ("DELETE", 204): title = nil
            case ("PATCH", 200), ("PUT", 200):
                title = newTitle
                seen.append((try #require(answer.headers["ETag"]), try #require(answer.headers["Last-Modified"])))
            case (_, 412) where title != nil:
                #expect(try JSONDecoder().decode(Note.self, from: answer.body).title == title)
            default: break
            }
            #expect(try self.title() == title, "seed \(seed) step \(step)")
            // Bring a deleted record back, so that the walk goes on.
            if title == nil, next() % 3 == 0 {
                _ = try backend.seed([Note(id: "1", title: "Again \(step)")], into: "notes")
                title = "Again \(step)"
                let read = try await send("GET")
                seen.append((try #require(read.headers["ETag"]), try #require(read.headers["Last-Modified"])))
            }
        }
    }
}
