import Foundation
import ResourceKit
import ResourceKitPocketBase
import ResourceKitTesting
import Testing

struct Note: Codable, Sendable, Equatable, Identifiable, Placeholdable {
    var id: String
    var title: String

    static var placeholder: Note { Note(id: "", title: "Placeholder") }
    static func placeholders(count: Int) -> [Note] {
        (0..<count).map { Note(id: String(format: "n%03d", $0), title: "Note \($0)") }
    }
}

struct NewNote: Encodable, Sendable {
    var title: String?
}

struct RemoteNote: Readable, Creatable, Updatable, Deletable {
    typealias Value = Note
    typealias ReadRequest = String
    typealias CreateRequest = NewNote
    typealias DeleteRequest = Note
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes").appending(id: id) }
    static func createEndpoint(for note: NewNote) -> Endpoint { Endpoint(.post, "notes", body: .json(note)) }
    static func updateEndpoint(for note: Note) -> Endpoint {
        Endpoint(.patch, "notes", body: .json(note)).appending(id: note.id)
    }
    static func deleteEndpoint(for note: Note) -> Endpoint { Endpoint(.delete, "notes").appending(id: note.id) }
}

struct RemoteNotes: Listable, Creatable {
    typealias Value = Note
    typealias ListResponse = PageEnvelope<Note>
    typealias CreateRequest = NewNote
    static let pagination = PageNumberPagination(pageSize: 10)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "notes") }
    static func createEndpoint(for note: NewNote) -> Endpoint { Endpoint(.post, "notes", body: .json(note)) }
}

func pocketBaseLayout() -> (InMemoryBackend, NetworkSession) {
    let backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
    backend.addCollection("notes", requiredFields: ["title"])
    let session = NetworkSession(
        baseURL: "http://backend.test/api/collections", validation: PocketBaseValidation(), transport: backend)
    return (backend, session)
}

struct PocketBaseNote: Readable {
    typealias Value = Note
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes/records").appending(id: id) }
}

@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendTests {
    /// A list whose `ListRequest` is `Void` is made without a `request: ()`, and reads the same pages.
    @Test func aListWithoutARequestIsMadeWithoutOne() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("notes", requiredFields: ["title"])
        try backend.seedPlaceholders(Note.self, count: 12, into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let implicit = ListResource<RemoteNotes>(session: session)
        let explicit = ListResource<RemoteNotes>(session: session, request: ())
        try await implicit.loadNextPage()
        try await explicit.loadNextPage()
        #expect(implicit.items.count == 10)
        #expect(implicit.listState == explicit.listState)

        let preview = ListResource<RemoteNotes>(state: ListState(content: .available([Note(id: "1", title: "A")])))
        #expect(preview.items == [Note(id: "1", title: "A")])
        await #expect(throws: NetworkError.self) { try await preview.refresh() }
    }

    @Test func fullCRUDRoundTrip() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("notes", requiredFields: ["title"])
        try backend.seedPlaceholders(Note.self, count: 10, into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let note = Resource<RemoteNote>(session: session)
        let list = ListResource<RemoteNotes>(session: session, request: ())

        let created = try await note.create(NewNote(title: "Eleventh"))
        #expect(created.title == "Eleventh")
        try await list.loadNextPage()
        #expect(!list.items.contains(created))
        try await list.loadNextPage()
        #expect(list.items.last == created)
        #expect(list.pagination.pagesLoaded == 2)

        try await note.update(Note(id: created.id, title: "Renamed"))
        #expect(try await note.read(created.id) == Note(id: created.id, title: "Renamed"))
        try await note.delete()
        #expect(note.state == .idle)
        await #expect(throws: NetworkError.self) { try await note.read(created.id) }
        #expect(note.state.error?.statusCode == 404)
    }

    @Test func basePathTemplateMatchesPocketBase() async throws {
        let (backend, session) = pocketBaseLayout()
        let ids = try backend.seed([Note(id: "", title: "a")], into: "notes")
        let note = Resource<PocketBaseNote>(session: session)
        #expect(try await note.read(ids[0]).title == "a")
        #expect(backend.requestLog.last?.path == "/api/collections/notes/records/\(ids[0])")
    }

    @Test func missingRequiredFieldReachesTheAppAsFieldErrors() async throws {
        let (_, session) = pocketBaseLayout()
        struct RemotePBNote: Creatable {
            typealias Value = Note
            typealias CreateRequest = NewNote
            static func createEndpoint(for note: NewNote) -> Endpoint {
                Endpoint(.post, "notes/records", body: .json(note))
            }
        }
        let note = Resource<RemotePBNote>(session: session)
        let error = await #expect(throws: NetworkError.self) { try await note.create(NewNote(title: nil)) }
        let server = try #require(error?.serverError)
        #expect(server.status == 400)
        #expect(server.fieldErrors == ["title": "Cannot be blank."])
        #expect(note.state == .failure(try #require(error), previous: nil))
    }

    @Test(arguments: [
        (InMemoryBackend.Fault.status(503), "httpStatus"),
        (.dropConnection, "transport"),
        (.malformedBody, "decoding"),
        (.truncatedBody, "decoding"),
        (.slowBody(.seconds(2)), "timeout"),
    ])
    func injectedFaultsProduceTheDocumentedError(fault: InMemoryBackend.Fault, kind: String) async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([Note(id: "1", title: "one")], into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        struct ShortTimeout: Readable {
            typealias Value = Note
            static func readEndpoint(for request: Void) -> Endpoint {
                var endpoint = Endpoint(.get, "notes/1")
                endpoint.timeLimit = .seconds(1)
                return endpoint
            }
        }
        let note = Resource<ShortTimeout>(session: session, state: .available(Note(id: "1", title: "cached")))
        backend.injectFault(fault)
        let error = try #require(await #expect(throws: NetworkError.self) { try await note.read() })
        #expect(error.code.name == kind)
        switch error.code {
        case .httpStatus: #expect(error.statusCode == 503)
        case .transport: #expect(error.transportCode == .networkConnectionLost)
        case .decoding, .timeout: break
        default: Issue.record("\(fault) gave \(error)")
        }
        #expect(note.state == .failure(error, previous: Note(id: "1", title: "cached")))
        #expect(try await note.read() == Note(id: "1", title: "one"))
    }

    @Test func tenThousandConcurrentCreatesLoseNothing() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("notes", requiredFields: ["title"])
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let ids = try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<50 {
                group.addTask {
                    var ids: [String] = []
                    for index in 0..<200 {
                        let note: Note = try await session.send(
                            Endpoint(.post, "notes", body: .json(NewNote(title: "w\(worker)-\(index)"))))
                        ids.append(note.id)
                    }
                    return ids
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(ids.count == 10_000)
        #expect(Set(ids).count == 10_000)
        #expect(backend.records(in: "notes").count == 10_000)
    }

    @Test func latencyDoesNotBlockAndIsCancellable() async throws {
        // A latency no test outlasts: only the cancellation can end the request.
        let backend = InMemoryBackend(basePath: "/api", latency: .seconds(3600))
        try backend.seed([Note(id: "1", title: "one")], into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let task = Task { try await session.data(for: Endpoint(.get, "notes/1")) }
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
    }

    @Test(arguments: [Duration.zero, .seconds(-1), .seconds(1_000_000_001), .seconds(Int64.max)])
    func unusualTimeLimitsMeanNoLimit(timeLimit: Duration) async throws {
        let backend = InMemoryBackend(basePath: "/api", latency: .milliseconds(5))
        try backend.seed([Note(id: "1", title: "one")], into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        var endpoint = Endpoint(.get, "notes/1")
        endpoint.timeLimit = timeLimit
        let note: Note = try await session.send(endpoint)
        #expect(note.title == "one")
    }

    @Test(arguments: [
        ["page": String(Int.max), "perPage": "1000"], ["page": "-5"], ["perPage": "0"], ["perPage": ""],
        ["offset": String(Int.max), "limit": "1000"], ["offset": "-1", "limit": String(Int.min)],
    ])
    func absurdPagingParametersAnswerAPage(query: [String: String]) async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed(Note.placeholders(count: 5), into: "notes")
        let session = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        let response = try await session.response(for: Endpoint(.get, "notes", query: query))
        #expect(response.statusCode == 200)
    }

    @Test func requestLogRecordsWhatArrived() async throws {
        let backend = InMemoryBackend()
        let session = NetworkSession(baseURL: "http://backend.test", transport: backend)
        _ = try? await session.data(
            for: Endpoint(.post, "nothing", query: ["a": "1"], headers: ["X-Test": "yes"], body: .json(["k": "v"])))
        let logged = try #require(backend.requestLog.first)
        #expect(logged.method == .post)
        #expect(logged.path == "/nothing")
        #expect(logged.query == ["a": "1"])
        #expect(logged.headers["x-test"] == "yes")
        #expect(logged.body == Data(#"{"k":"v"}"#.utf8))
    }
}

@Suite(.timeLimit(.minutes(1))) struct StateRecorderTests {
    @Test func timeoutListsTheStatesSeen() async throws {
        let resource = Resource<RemoteNote>(state: .available(Note(id: "1", title: "one")))
        let recorder = resource.recordStates()
        let error = await #expect(throws: WaitTimeout.self) {
            try await recorder.waitForCount(3, timeout: .milliseconds(100))
        }
        #expect(try #require(error).reason == .timedOut)
        #expect(try #require(error).seen == [#"available(Note(id: "1", title: "one"))"#])
        let message = try #require(error).description
        #expect(message.hasPrefix("Timed out after 0.1 seconds waiting for 3 states"))
        #expect(message.contains("saw 1: [available(Note(id: \"1\", title: \"one\"))]"))
    }

    @Test func expectFailsOnADifferentSequence() async throws {
        let resource = Resource<RemoteNote>(state: .idle)
        let recorder = resource.recordStates()
        let error = await #expect(throws: WaitTimeout.self) {
            try await recorder.expect([.loading(previous: nil)])
        }
        #expect(try #require(error).reason == .mismatched)
        #expect(try #require(error).seen == ["idle"])
        #expect(try #require(error).description.hasPrefix("What arrived differs from [loading(previous: nil)]"))
    }

    @Test func waitsEndAsSoonAsTheStreamFinishes() async throws {
        var resource: Resource<RemoteNote>? = Resource<RemoteNote>(state: .idle)
        let recorder = try #require(resource).recordStates()
        try await recorder.waitForCount(1)
        // With an hour's timeout, only the end of the stream can end these waits within the suite's limit.
        let waiting = try await recorder.registeredWait(for: 3)
        resource = nil
        let error = await #expect(throws: WaitTimeout.self) { try await waiting.value }
        #expect(try #require(error).reason == .finished)
        #expect(try #require(error).description.hasPrefix("The stream finished before 3 states"))
        // A wait that starts after the end fails at once too.
        let late = await #expect(throws: WaitTimeout.self) {
            try await recorder.expect([.idle, .loading(previous: nil)], timeout: .seconds(3600))
        }
        #expect(try #require(late).reason == .finished)
    }

    @Test func placeholderListNeedsNoNetwork() async throws {
        let list = ListResource<RemoteNotes>.placeholder(count: 3)
        #expect(list.items.map(\.id) == ["n000", "n001", "n002"])
        #expect(list.pagination == PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3))
        let skeleton = ListResource<RemoteNotes>.placeholder(count: 2, isLoading: true)
        #expect(skeleton.state == .loading(previous: Note.placeholders(count: 2)))
        // At the end of its one page, a next page costs nothing; a refresh has no network to go to.
        #expect(try await list.loadNextPage().count == 3)
        await #expect(throws: NetworkError.self) { try await list.refresh() }
        #expect(list.items.count == 3)
    }

    @Test func placeholderListIsReadyForPreviews() {
        let list = ListResource<RemoteNotes>(
            request: (),
            state: ListState(
                content: .available(Note.placeholders(count: 3)),
                pagination: PaginationStatus(hasMore: false, pagesLoaded: 1)))
        #expect(list.items.map(\.id) == ["n000", "n001", "n002"])
    }
}
