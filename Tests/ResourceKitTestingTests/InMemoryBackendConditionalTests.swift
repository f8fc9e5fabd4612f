import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The backend's validators (`ETag`, `Last-Modified`), its `304`s, and injected faults on conditional requests.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendConditionalTests {
    let backend = InMemoryBackend(basePath: "/api")
    let one = Note(id: "1", title: "one")

    init() throws {
        try backend.seed([one], into: "notes")
    }

    /// A `GET` of a note, straight to the backend, with these request headers.
    func get(_ id: String = "1", headers: [String: String] = [:]) async throws -> HTTPResponse {
        var request = URLRequest(url: try #require(URL(string: "http://backend.test/api/notes/\(id)")))
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await backend.send(request)
    }

    func patch(_ id: String, title: String) async throws {
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        try await Resource<RemoteNote>(session: session).update(Note(id: id, title: title))
    }

    // MARK: Faults

    @Test(arguments: [
        InMemoryBackend.Fault.status(503), .dropConnection, .malformedBody, .truncatedBody,
    ])
    func anInjectedFaultFiresOnAConditionalRead(fault: InMemoryBackend.Fault) async throws {
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let note = Resource<RemoteNote>(session: session)
        let tag = try #require(try await get().headers["ETag"])
        backend.clearLog()
        #expect(try await note.read("1") == one)
        backend.injectFault(fault)
        let error = try #require(await #expect(throws: NetworkError.self) { try await note.read("1") })
        #expect(backend.requestLog[1].headers["If-None-Match"] == tag)
        if fault == .status(503) {
            let body = Data(#"{"data":{},"message":"Injected failure.","status":503}"#.utf8)
            #expect(error == .httpStatus(code: 503, body: body))
        } else if fault == .dropConnection {
            #expect(
                error
                    == .transport(
                        code: .networkConnectionLost, message: "the server closed the connection before answering"))
        } else if fault == .malformedBody || fault == .truncatedBody {
            #expect(error.code == .decoding)
            #expect(error.decodingFailure?.type == "Note")
        } else {
            Issue.record("\(fault) gave \(error)")
        }
        #expect(note.state == .failure(error, previous: one))
        // The fault is spent: the next read is served (in full: after a failure the resource sends no validators).
        #expect(try await note.read("1") == one)
        #expect(backend.requestLog.map { $0.headers["If-None-Match"] } == [nil, tag, nil])
        #expect(note.state == .available(one))
    }

    @Test(arguments: [InMemoryBackend.Fault.malformedBody, .truncatedBody])
    func aBodyFaultAnswersAConditionalRequestWithABroken200(fault: InMemoryBackend.Fault) async throws {
        let full = try await get()
        let tag = try #require(full.headers["ETag"])
        let date = try #require(full.headers["Last-Modified"])
        for conditions in [["If-None-Match": tag], ["If-Modified-Since": date]] {
            backend.injectFault(fault)
            let broken = try await get(headers: conditions)
            #expect(broken.statusCode == 200)
            // The full response's headers, validators included, over a broken body.
            #expect(broken.headers == full.headers)
            let expected =
                fault == .malformedBody ? Data("<html>this is not JSON".utf8) : full.body.prefix(full.body.count / 2)
            #expect(broken.body == expected)
            #expect(try await get(headers: conditions).statusCode == 304)
        }
    }

    @Test func aSlowBodyTimesOutAConditionalRead() async throws {
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://backend.test/api", transport: backend, timeLimit: nil, clock: clock)
        struct ShortTimeout: Readable {
            typealias Value = Note
            static func readEndpoint(for request: Void) -> Endpoint {
                var endpoint = Endpoint(.get, "notes/1")
                endpoint.timeLimit = .milliseconds(800)
                return endpoint
            }
        }
        let note = Resource<ShortTimeout>(session: session)
        #expect(try await note.read() == one)
        backend.injectFault(.slowBody(.seconds(3600)))
        let read = Task { try await note.read() }
        try await clock.waitForSleepers(timeout: .seconds(30)) { $0 == [.milliseconds(800)] }
        clock.advance(by: .milliseconds(800))
        await #expect(throws: NetworkError.timeout) { try await read.value }
        #expect(backend.requestLog.map { $0.headers["If-None-Match"] != nil } == [false, true])
    }

    // MARK: Last-Modified

    @Test func aRecordCarriesLastModifiedAsAnIMFFixdate() async throws {
        let response = try await get()
        #expect(response.headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:01 GMT")
        // Reading changes nothing.
        #expect(try await get().headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:01 GMT")
    }

    @Test func lastModifiedChangesWithEveryWriteToTheRecordOnly() async throws {
        try backend.seed([Note(id: "2", title: "two")], into: "notes")
        #expect(try await get("2").headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:02 GMT")
        try await patch("1", title: "edited")
        #expect(try await get("1").headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:03 GMT")
        #expect(try await get("2").headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:02 GMT")
        // The same content written again is another version, with another date.
        try await patch("1", title: "edited")
        #expect(try await get("1").headers["Last-Modified"] == "Sat, 01 Jan 2000 00:00:04 GMT")
    }

    // MARK: If-Modified-Since

    @Test func ifModifiedSinceIsAnsweredNotModifiedUntilTheRecordChanges() async throws {
        let full = try await get()
        let date = try #require(full.headers["Last-Modified"])
        let notModified = try await get(headers: ["If-Modified-Since": date])
        #expect(notModified.statusCode == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.headers["ETag"] == full.headers["ETag"])
        #expect(notModified.headers["Last-Modified"] == date)
        #expect(try await get(headers: ["If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"]).statusCode == 200)
        #expect(try await get(headers: ["If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"]).statusCode == 304)

        try await patch("1", title: "edited")
        let changed = try await get(headers: ["If-Modified-Since": date])
        #expect(changed.statusCode == 200)
        #expect(try JSONDecoder().decode(Note.self, from: changed.body) == Note(id: "1", title: "edited"))
    }

    @Test func ifNoneMatchTakesPrecedenceOverIfModifiedSince() async throws {
        let full = try await get()
        let tag = try #require(full.headers["ETag"])
        let date = try #require(full.headers["Last-Modified"])
        let stale = try await get(headers: ["If-None-Match": "\"other\"", "If-Modified-Since": date])
        #expect(stale.statusCode == 200)
        #expect(stale.body == full.body)
        let fresh = try await get(headers: ["If-None-Match": tag, "If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"])
        #expect(fresh.statusCode == 304)
    }

    @Test(arguments: [
        "Sat, 01 Jan 2000 00:00:01 GMT",  // IMF-fixdate
        "Saturday, 01-Jan-00 00:00:01 GMT",  // RFC 850
        "Sat Jan  1 00:00:01 2000",  // asctime
    ])
    func everyHTTPDateFormatIsRead(date: String) async throws {
        #expect(try await get(headers: ["If-Modified-Since": date]).statusCode == 304)
    }

    @Test(arguments: [
        "", "yesterday", "Sat, 01 Jan 2000 00:00:01", "Sat, 01 Jan 2000 00:00:01 UTC", "Sat,  01 Jan 2000 00:00:01 GMT",
        "Sat, 32 Jan 2000 00:00:01 GMT", "Sat, 29 Feb 2001 00:00:01 GMT", "Sat, 01 Foo 2000 00:00:01 GMT",
        "Sat, 01 Jan 2000 24:00:00 GMT", "Sat, 01 Jan 99999 00:00:01 GMT", "Sat, 01 Jan 2000 00:00:01 GMT, extra",
        "Sat, 01 Jan 2000 00:00:01 GMT, Sat, 01 Jan 2000 00:00:01 GMT", "Sat Jan 1 00:00:01 2000", "１２３", "Sat, ",
    ])
    func anUnreadableIfModifiedSinceIsIgnored(value: String) async throws {
        let response = try await get(headers: ["If-Modified-Since": value])
        #expect(response.statusCode == 200)
        #expect(try JSONDecoder().decode(Note.self, from: response.body) == one)
    }

}
