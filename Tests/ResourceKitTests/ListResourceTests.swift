import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Item: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var n: Int
}

/// Pages of 10 with PocketBase's envelope.
struct RemoteItems: Listable, Creatable, Updatable, Deletable {
    typealias Value = Item
    typealias ListResponse = PageEnvelope<Item>
    static let pagination = PageNumberPagination(pageSize: 10)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
    static func createEndpoint(for item: Item) -> Endpoint { Endpoint(.post, "items", body: .json(item)) }
    static func updateEndpoint(for item: Item) -> Endpoint {
        Endpoint(.patch, "items", body: .json(item)).appending(id: item.id)
    }
    static func deleteEndpoint(for item: Item) -> Endpoint { Endpoint(.delete, "items").appending(id: item.id) }
}

/// Bare arrays, no totals: the end is a short or empty page.
struct RemoteBareItems: Listable {
    typealias Value = Item
    typealias ListResponse = ArrayPage<Item>
    static let pagination = OffsetPagination(limit: 10)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
}

struct RemoteLinkedItems: Listable {
    typealias Value = Item
    typealias ListResponse = ArrayPage<Item>
    static let pagination = LinkHeaderPagination()
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items", query: ["limit": "10"]) }
}

struct RemotePagedItems: Listable {
    typealias Value = Item
    typealias ListResponse = PageEnvelope<Item>
    static let pagination = PageNumberPagination(pageSize: 10)
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
}

func items(_ range: Range<Int>) -> [Item] { range.map { Item(id: String(format: "i%03d", $0), n: $0) } }

func backend(with count: Int) throws -> InMemoryBackend {
    let backend = InMemoryBackend(basePath: "/api")
    backend.addCollection("items")
    try backend.seed(items(0..<count), into: "items")
    return backend
}

func envelope(_ page: [Item], page number: Int = 1, totalItems: Int? = nil, totalPages: Int? = nil) -> Data {
    let body = PageEnvelopeBody(page: number, perPage: 10, totalItems: totalItems, totalPages: totalPages, items: page)
    return try! JSONEncoder().encode(body)
}

struct PageEnvelopeBody: Encodable {
    var page: Int
    var perPage: Int
    var totalItems: Int?
    var totalPages: Int?
    var items: [Item]
}

@Suite(.timeLimit(.minutes(1))) struct ListResourceTests {
    @Test func concurrentNextPageCallsRequestEachPageOnce() async throws {
        let backend = try backend(with: 25)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadFirstPage()
        async let a = list.loadNextPage()
        async let b = list.loadNextPage()
        _ = try await (a, b)
        try await list.loadNextPage()
        #expect(backend.requestLog.map { $0.query["page"] } == ["1", "2", "3"])
        #expect(list.items == items(0..<25))
    }

    @Test func twentyFiveItemsMakeThreePagesThenNoRequest() async throws {
        let backend = try backend(with: 25)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadNextPage()
        #expect(list.pagination.totalCount == 25)
        try await list.loadNextPage()
        #expect(list.pagination.hasMore)
        try await list.loadNextPage()
        #expect(!list.pagination.hasMore)
        #expect(list.pagination.pagesLoaded == 3)
        try await list.loadNextPage()
        #expect(backend.requestLog.map { $0.query["page"] } == ["1", "2", "3"])
        #expect(list.items.count == 25)
    }

    /// The backend's answers without their `X-Total-Count`, for a server that sends no total.
    struct WithoutTotals: HTTPTransport {
        let backend: InMemoryBackend
        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            var response = try await backend.send(request)
            response.headers["X-Total-Count"] = nil
            return response
        }
    }

    @Test func withoutTotalsAShortOrEmptyPageEndsTheList() async throws {
        let short = try backend(with: 25)
        let list = ListResource<RemoteBareItems>(session: makeSession(WithoutTotals(backend: short)), request: ())
        try await list.loadAll()
        #expect(short.requestLog.map { $0.query["offset"] } == ["0", "10", "20"])
        #expect(list.items == items(0..<25))

        let exact = try backend(with: 20)
        let exactList = ListResource<RemoteBareItems>(
            session: makeSession(WithoutTotals(backend: exact)), request: ())
        try await exactList.loadAll()
        #expect(exact.requestLog.map { $0.query["offset"] } == ["0", "10", "20"])
        #expect(exactList.items == items(0..<20))
        #expect(!exactList.pagination.hasMore)
    }

    @Test func emptyPageEndsTheListEvenWithoutTotals() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/items", body: envelope([]))
        let list = ListResource<RemotePagedItems>(session: makeSession(stub), request: ())
        try await list.loadFirstPage()
        #expect(!list.pagination.hasMore)
        #expect(list.state == .available([]))
    }

    @Test func failedPageKeepsItemsAndRetries() async throws {
        let backend = try backend(with: 30)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        let recorder = list.recordStates()
        try await list.loadNextPage()
        try await list.loadNextPage()
        backend.failNext(status: 500)
        let error = await #expect(throws: NetworkError.self) { try await list.loadNextPage() }
        #expect(error?.statusCode == 500)
        let kept = items(0..<20)
        #expect(list.state == .failure(try #require(error), previous: kept))
        #expect(list.pagination.nextPageError == error)
        #expect(list.pagination.pagesLoaded == 2)
        try await list.loadNextPage()
        #expect(list.items == items(0..<30))
        #expect(list.pagination.nextPageError == nil)
        #expect(backend.requestLog.map { $0.query["page"] } == ["1", "2", "3", "3"])
        let states = try await recorder.waitForCount(9)
        #expect(states.count == 9)
        #expect(
            states.map(\.content) == [
                .idle, .loading(previous: nil), .available(items(0..<10)),
                .available(items(0..<10)), .available(kept),
                .available(kept), .failure(try #require(error), previous: kept),
                .available(kept), .available(items(0..<30)),
            ])
        #expect(
            states.map(\.pagination.isLoadingNextPage) == [false, false, false, true, false, true, false, true, false])
    }

    @Test func cancelledNextPageRestoresTheListExactly() async throws {
        let backend = try backend(with: 30)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadNextPage()
        backend.failNext(status: 500)
        _ = try? await list.loadNextPage()
        let before = list.listState
        #expect(before.content.error?.statusCode == 500)
        backend.setLatency(.seconds(3600))
        let recorder = list.recordStates()
        let task = Task { try await list.loadNextPage() }
        try await recorder.waitForCount(2)
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(list.listState == before)
        backend.setLatency(.zero)
        try await list.loadNextPage()
        #expect(list.items == items(0..<20))
    }

    @Test func refreshDuringNextPageWinsAndTheLatePageIsDropped() async throws {
        let stub = StubTransport()
        let latch = AsyncLatch()
        let fresh = [Item(id: "new", n: -1)] + items(0..<9)
        let isRefreshed = AsyncLatch()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let page = Int(query.first { $0.name == "page" }?.value ?? "1") ?? 1
            if page == 4 {
                try await latch.wait()
                return HTTPResponse(statusCode: 200, body: envelope(items(30..<40), page: 4, totalPages: 9))
            }
            if page == 1 && isRefreshed.isOpen {
                return HTTPResponse(statusCode: 200, body: envelope(fresh, page: 1, totalPages: 9))
            }
            return HTTPResponse(
                statusCode: 200, body: envelope(items((page - 1) * 10..<page * 10), page: page, totalPages: 9))
        }
        let list = ListResource<RemotePagedItems>(session: makeSession(stub), request: ())
        try await list.loadAll(maxPages: 3)
        let pageFour = Task { try await list.loadNextPage() }
        try await stub.waitForRequests(4, timeout: .seconds(30))
        isRefreshed.open()
        try await list.refresh()
        #expect(list.items == fresh)
        // The page's caller is told its page was dropped, at once: the refresh cancelled its request.
        await #expect(throws: NetworkError.superseded) { try await pageFour.value }
        latch.open()
        #expect(list.items == fresh)
        #expect(list.pagination.pagesLoaded == 1)
        #expect(list.pagination.isLoadingNextPage == false)
        // The next page after the refresh is page 2 of the new list.
        try await list.loadNextPage()
        #expect(stub.requests.last?.url?.query?.contains("page=2") == true)
    }

    @Test func relativeLinksResolveAgainstTheRequestWhenTheTransportGivesNoURL() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let offset = Int(query.first { $0.name == "offset" }?.value ?? "0") ?? 0
            let page = items(offset..<min(30, offset + 10))
            var headers: HTTPHeaders = [:]
            if offset + 10 < 30 { headers["Link"] = "</api/items?limit=10&offset=\(offset + 10)>; rel=\"next\"" }
            // No `url:` in the response, as a custom transport may well answer.
            return HTTPResponse(statusCode: 200, headers: headers, body: try! JSONEncoder().encode(page))
        }
        let list = ListResource<RemoteLinkedItems>(session: makeSession(stub), request: ())
        try await list.loadAll()
        #expect(list.items == items(0..<30))
    }

    @Test func offsetPagesReadXTotalCountAndEndWithoutAnEmptyRequest() async throws {
        let backend = try backend(with: 30)
        let list = ListResource<RemoteBareItems>(session: makeSession(backend), request: ())
        try await list.loadAll()
        #expect(list.items == items(0..<30))
        #expect(list.pagination.totalCount == 30)
        #expect(backend.requestLog.count == 3)
    }

    @Test func offsetPagesSurviveAServerThatCapsTheLimit() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let offset = Int(query.first { $0.name == "offset" }?.value ?? "0") ?? 0
            // Asked for 10, it sends at most 4.
            let page = items(offset..<min(12, offset + 4))
            return HTTPResponse(
                statusCode: 200, headers: ["X-Total-Count": "12"], body: try! JSONEncoder().encode(page))
        }
        let list = ListResource<RemoteBareItems>(session: makeSession(stub), request: ())
        try await list.loadAll()
        #expect(list.items == items(0..<12))
        #expect(
            stub.requests.map { $0.url?.query ?? "" } == [
                "offset=0&limit=10", "offset=4&limit=10", "offset=8&limit=10",
            ])
    }

    @Test func itemMovedToTheNextPageAppearsOnce() async throws {
        // Between page 1 and page 2 the server inserts an item at the front: item 9 moves to page 2.
        let shifting = StubTransport()
        shifting.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let page = request.url?.query?.contains("page=2") == true ? 2 : 1
            let inserted = [Item(id: "new", n: -1)] + items(0..<25)
            let slice = page == 1 ? items(0..<10) : Array(inserted[10..<20])
            return HTTPResponse(statusCode: 200, body: envelope(slice, page: page, totalItems: 26, totalPages: 3))
        }
        let shiftingList = ListResource<RemotePagedItems>(session: makeSession(shifting), request: ())
        try await shiftingList.loadFirstPage()
        try await shiftingList.loadNextPage()
        #expect(shiftingList.items.map(\.id) == items(0..<19).map(\.id))
        #expect(shiftingList.items.filter { $0.id == "i009" }.count == 1)
    }

    @Test func loadingNPagesCostsNRequests() async throws {
        let backend = try backend(with: 95)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        for pages in 1...10 {
            try await list.loadNextPage()
            #expect(backend.requestLog.count == pages)
        }
        #expect(list.items == items(0..<95))
        try await list.loadNextPage()
        #expect(backend.requestLog.count == 10)
    }

    @Test func createUpdateDeleteThroughTheList() async throws {
        let backend = try backend(with: 3)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadFirstPage()
        let created = try await list.create(Item(id: "new", n: 7))
        #expect(list.items.map(\.id) == ["i000", "i001", "i002", "new"])
        try await list.update(Item(id: "i001", n: 100))
        #expect(list.items[1] == Item(id: "i001", n: 100))
        try await list.delete(created)
        #expect(list.items.map(\.id) == ["i000", "i001", "i002"])
        try await list.delete(list.items[0])
        #expect(list.items.map(\.id) == ["i001", "i002"])
        #expect(backend.records(in: "items").count == 2)
        await #expect(throws: NetworkError.self) { try await list.delete(Item(id: "nope", n: 0)) }
        #expect(list.items.map(\.id) == ["i001", "i002"])
    }

    @Test func listStateIsObservableAndStreamed() async throws {
        let backend = try backend(with: 15)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        let fired = Locked(0)
        withObservationTracking {
            _ = list.listState
        } onChange: {
            fired.withLock { $0 += 1 }
        }
        let recorder = list.recordStates()
        try await list.loadAll()
        #expect(fired.withLock { $0 } == 1)
        let states = try await recorder.waitForCount(5)
        #expect(
            states.map(\.content) == [
                .idle, .loading(previous: nil), .available(items(0..<10)), .available(items(0..<10)),
                .available(items(0..<15)),
            ])
        #expect(states.map(\.pagination.isLoadingNextPage) == [false, false, false, true, false])
        #expect(states.map(\.pagination.pagesLoaded) == [0, 0, 1, 1, 2])
        #expect(list.observerCount == 1)
    }

    @Test func cursorPaginationFollowsTheBodyToken() async throws {
        struct RemoteCursorItems: Listable {
            typealias Value = Item
            typealias ListResponse = CursorEnvelope<Item>
            static let pagination = CursorPagination(pageSize: 2)
            static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
        }
        let stub = StubTransport()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = request.url?.query ?? ""
            let body: String =
                if query.contains("cursor=b") { #"{"items":[{"id":"c","n":3}],"nextCursor":null}"# } else {
                    #"{"items":[{"id":"a","n":1},{"id":"b","n":2}],"nextCursor":"b"}"#
                }
            return HTTPResponse(statusCode: 200, body: Data(body.utf8))
        }
        let list = ListResource<RemoteCursorItems>(session: makeSession(stub), request: ())
        try await list.loadAll()
        #expect(list.items.map(\.id) == ["a", "b", "c"])
        #expect(stub.requests.map { $0.url?.query ?? "" } == ["limit=2", "cursor=b&limit=2"])
    }
}

@Suite(.timeLimit(.minutes(1))) struct PageSequenceTests {
    @Test func sequenceOverTenThousandItemsMakesOneHundredRequests() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed(items(0..<10_000), into: "items")
        struct RemoteHundreds: Listable {
            typealias Value = Item
            typealias ListResponse = PageEnvelope<Item>
            static let pagination = PageNumberPagination(pageSize: 100)
            static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
        }
        let session = makeSession(backend)
        var count = 0
        var last = -1
        for try await page in session.pages(of: RemoteHundreds.self) {
            count += page.items.count
            #expect(page.items.first?.n == last + 1)
            last = page.items.last?.n ?? last
        }
        #expect(count == 10_000)
        #expect(backend.requestLog.count == 100)

        backend.clearLog()
        var pages = 0
        for try await _ in session.pages(of: RemoteHundreds.self) {
            pages += 1
            if pages == 3 { break }
        }
        #expect(backend.requestLog.count == 3)
    }
}
