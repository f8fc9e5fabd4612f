import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase
import ResourceKitTesting
import Testing

private struct Memo: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var text: String
}

private struct RemoteMemo: Readable, Updatable {
    typealias Value = Memo
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint {
        Endpoint(.get, "collections/notes/records").appending(id: id)
    }
    static func updateEndpoint(for note: Memo) -> Endpoint {
        Endpoint(.patch, "collections/notes/records", body: .json(note)).appending(id: note.id)
    }
}

private struct RemoteMemos: Listable {
    typealias Value = Memo
    typealias Item = Memo
    typealias ListResponse = PageEnvelope<Memo>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "collections/notes/records") }
    static func placement(ofCreated item: Memo, in request: Void) -> ListPlacement { .end }
}

/// The backend's PocketBase realtime API, under `PocketBaseRealtime` and raw.
@Suite(.timeLimit(.minutes(1))) struct InMemoryBackendRealtimeTests {
    let backend: InMemoryBackend
    let session: NetworkSession

    init() throws {
        backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
        backend.addCollection("notes")
        try backend.seed([Memo(id: "n1", text: "one")], into: "notes")
        backend.serveRealtime(at: "/api/realtime")
        session = NetworkSession(baseURL: "http://backend.test/api", transport: backend, timeLimit: nil)
    }

    @Test func theRawStreamStartsWithAClientIDAndCarriesSubscribedWritesOnly() async throws {
        let response = try await session.bytes(Endpoint(.get, "realtime"))
        #expect(response.headers["Content-Type"] == "text/event-stream")
        var events = EventStreamParser()
        var chunks = response.body.makeAsyncIterator()
        var received: [ServerSentEvent] = []
        func next() async throws -> ServerSentEvent {
            while received.isEmpty {
                let chunk = try #require(try await chunks.next())
                received = try events.parse(chunk)
            }
            return received.removeFirst()
        }
        let connect = try await next()
        #expect(connect.type == "PB_CONNECT")
        struct Connect: Decodable { var clientId: String }
        let client = try JSONDecoder().decode(Connect.self, from: Data(connect.data.utf8)).clientId
        #expect(connect.lastEventID == client)
        // A bad body, an unknown client, then the record's topic.
        let bad = await #expect(throws: NetworkError.self) {
            _ = try await session.response(
                for: Endpoint(.post, "realtime", body: .data(Data("[]".utf8), contentType: "application/json")))
        }
        #expect(bad?.statusCode == 400)
        let unknown = await #expect(throws: NetworkError.self) {
            _ = try await session.response(for: Endpoint(.post, "realtime", body: .json(["clientId": "nobody"])))
        }
        #expect(unknown?.statusCode == 404)
        struct Subscribe: Encodable, Sendable { var clientId: String; var subscriptions: [String] }
        let subscribed = try await session.response(
            for: Endpoint(.post, "realtime", body: .json(Subscribe(clientId: client, subscriptions: ["notes/n1"]))))
        #expect(subscribed.statusCode == 204)
        #expect(backend.realtimeSubscriptions == [["notes/n1"]])
        // A create is not an event of a record's topic; its update is.
        _ = try await session.response(
            for: Endpoint(.post, "collections/notes/records", body: .json(Memo(id: "n2", text: "two"))))
        _ = try await session.response(for: RemoteMemo.updateEndpoint(for: Memo(id: "n1", text: "uno")))
        let update = try await next()
        #expect(update.type == "notes/n1")
        #expect(update.data.contains(#""action":"update""#))
        #expect(update.data.contains(#""text":"uno""#))
        response.body.cancel()
        try await Changes.wait("the client is gone", timeout: .seconds(120)) { backend.realtimeClientCount == 0 }
    }

    @Test func pocketBaseRealtimeKeepsAStoreLiveAndResyncsAfterARestart() async throws {
        let store = ResourceStore(session: session)
        let notes = store.list(RemoteMemos.self)
        try await notes.refresh()
        let states = notes.recordStates()
        defer { states.stop() }
        let opened = AsyncStream.makeStream(of: Int.self)
        let live = Task {
            try await PocketBaseRealtime(
                session: session, reconnect: ReconnectPolicy(initialDelay: .milliseconds(10), jitter: .none),
                onOpen: { opened.continuation.yield($0) }
            )
            .following(RemoteMemo.self, collection: "notes").run(in: store)
        }
        defer { live.cancel() }
        var openings = opened.stream.makeAsyncIterator()
        #expect(await openings.next() == 1)
        #expect(backend.realtimeSubscriptions == [["notes/*"]])
        backend.clearLog()
        // Another client writes: the list shows it, with no read.
        let other = NetworkSession(baseURL: "http://backend.test/api", transport: backend)
        _ = try await other.response(
            for: Endpoint(.post, "collections/notes/records", body: .json(Memo(id: "n2", text: "two"))))
        try await states.wait { $0.last?.items.map(\.id) == ["n1", "n2"] }
        #expect(backend.requestLog.filter { $0.method == .get }.isEmpty)
        // A restart loses the stream; what changes then is read again once the source is back.
        backend.dropRealtimeConnections()
        try backend.seed([Memo(id: "n1", text: "changed while away")], into: "notes")
        #expect(await openings.next() == 2)
        try await states.wait { $0.last?.items.first?.text == "changed while away" }
    }
    /// The realtime connection is a request like any: not made while the backend is unreachable (nor logged), it
    /// takes an injected fault, and going unreachable cuts the streams that are open.
    @Test func theRealtimeConnectionHonoursReachabilityAndFaults() async throws {
        backend.isReachable = false
        await #expect(throws: NetworkError.self) { try await session.bytes(Endpoint(.get, "realtime")) }
        #expect(backend.requestLog.isEmpty)
        #expect(backend.realtimeClientCount == 0)
        backend.isReachable = true
        backend.failNext(status: 503)
        do {
            _ = try await session.bytes(Endpoint(.get, "realtime"))
            Issue.record("connected through a 503")
        } catch {
            #expect(error.statusCode == 503)
        }
        backend.injectFault(.dropConnection)
        do {
            _ = try await session.bytes(Endpoint(.get, "realtime"))
            Issue.record("connected through a dropped connection")
        } catch {
            #expect(error.transportCode == .networkConnectionLost)
        }
        #expect(backend.requestLog.count == 2)
        let open = try await session.bytes(Endpoint(.get, "realtime"))
        var chunks = open.body.makeAsyncIterator()
        #expect(try await chunks.next() != nil)
        #expect(backend.realtimeClientCount == 1)
        backend.isReachable = false
        do {
            while try await chunks.next() != nil {}
            Issue.record("the stream ended without an error")
        } catch {
            #expect(error.transportCode == .networkConnectionLost)
        }
    }
}
