import Foundation
import ResourceKit
import Synchronization
import Testing

/// httpbin's `/etag/{etag}` echo, its decoding counted to show that a `304` decodes nothing.
struct TaggedEcho: Decodable, Sendable, Equatable {
    static let decodings = Atomic<Int>(0)
    var url: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(String.self, forKey: .url)
        Self.decodings.add(1, ordering: .relaxed)
    }

    enum CodingKeys: CodingKey { case url }
}

struct RemoteTaggedEcho: Readable {
    typealias Value = TaggedEcho
    typealias ReadRequest = String
    static func readEndpoint(for tag: String) -> Endpoint { Endpoint(.get, "etag").appending(id: tag) }
}

/// httpbin's `/cache`: `Last-Modified` and `ETag`, and `304` to a conditional request.
/// httpbin's `/status/304`: a `304` whatever the request says.
struct RemoteNotModifiedEcho: Readable {
    typealias Value = TaggedEcho
    static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "status/304") }
}

struct RemoteCachedEcho: Readable {
    typealias Value = TaggedEcho
    static func readEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "cache") }
}

struct RemoteTaggedEchoes: Listable {
    typealias Value = TaggedEcho
    typealias Item = TaggedEcho
    typealias ListRequest = String
    typealias ListResponse = EchoPage<TaggedEcho>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for path: String) -> Endpoint { Endpoint(.get, path) }
}

extension TaggedEcho: Identifiable {
    var id: String { url }
}

@Suite(.serialized, .enabled(if: HTTPBin.isConfigured, HTTPBin.skipReason), .timeLimit(.minutes(2)))
struct ConditionalReadHTTPBinTests {
    /// A session on httpbin that records the headers of what it sends, and its events.
    func recordingSession() throws -> (NetworkSession, HeaderRecordingTransport, EventCollector) {
        let events = EventCollector()
        var recorder: HeaderRecordingTransport?
        let session = HTTPBin.session(adapters: [], logger: events) { transport in
            let recording = HeaderRecordingTransport(transport)
            recorder = recording
            return recording
        }
        return (session, try #require(recorder), events)
    }

    /// `/etag/{etag}` answers `304` to its own tag; `/cache` (an `ETag` and a `Last-Modified`) to any condition.
    @Test(arguments: ["etag/v1", "cache"])
    func aListPageRevalidatesOverRealSockets(path: String) async throws {
        let (session, sent, events) = try recordingSession()
        let list = ListResource<RemoteTaggedEchoes>(session: session, request: path)
        let decodings = TaggedEcho.decodings.load(ordering: .relaxed)
        let first = try await list.loadFirstPage()
        #expect(first.count == 1)
        #expect(try await list.refresh() == first)
        #expect(try await list.refresh() == first)
        // The server answered 304 twice: nothing was decoded after the first page.
        #expect(events.statuses == [200, 304, 304])
        #expect(TaggedEcho.decodings.load(ordering: .relaxed) == decodings + 1)
        let conditions = sent.requestHeaders.map { $0["If-None-Match"] }
        #expect(conditions.count == 3)
        #expect(conditions[0] == nil)
        #expect(conditions[1] != nil && conditions[2] == conditions[1])
        #expect(list.listState.content == .available(first))
    }

    @Test func anETagRoundTripWithANotModifiedAnswerOverRealSockets() async throws {
        let (session, sent, events) = try recordingSession()
        let resource = Resource<RemoteTaggedEcho>(session: session)
        let decodings = TaggedEcho.decodings.load(ordering: .relaxed)
        let first = try await resource.read("v1")
        #expect(TaggedEcho.decodings.load(ordering: .relaxed) == decodings + 1)
        let second = try await resource.read("v1")
        #expect(second == first)
        #expect(resource.state == .available(first))
        // The server answered 304: nothing was decoded.
        #expect(TaggedEcho.decodings.load(ordering: .relaxed) == decodings + 1)
        #expect(events.statuses == [200, 304])
        #expect(sent.requestHeaders.map { $0["If-None-Match"] } == [nil, "v1"])
        // Another tag is another request: no condition, a body.
        _ = try await resource.read("v2")
        #expect(TaggedEcho.decodings.load(ordering: .relaxed) == decodings + 2)
        #expect(events.statuses == [200, 304, 200])
    }

    @Test func lastModifiedAndETagFromCacheEndpoint() async throws {
        let events = EventCollector()
        let resource = Resource<RemoteCachedEcho>(session: HTTPBin.session(adapters: [], logger: events))
        let decodings = TaggedEcho.decodings.load(ordering: .relaxed)
        let value = try await resource.read()
        #expect(try await resource.read() == value)
        #expect(try await resource.read() == value)
        #expect(events.statuses == [200, 304, 304])
        #expect(TaggedEcho.decodings.load(ordering: .relaxed) == decodings + 1)
    }

    @Test func aNotModifiedAnswerToAnUnconditionalReadIsAnHTTPError() async throws {
        let resource = Resource<RemoteNotModifiedEcho>(session: HTTPBin.session(adapters: []))
        let error = await #expect(throws: NetworkError.self) { try await resource.read() }
        #expect(error?.statusCode == 304)
        #expect(resource.state.error?.statusCode == 304)
    }
}
