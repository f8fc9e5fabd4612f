import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The concurrency contract of `ListResource`, one interleaving per test.
@Suite(.timeLimit(.minutes(2))) struct ListContractTests {
    func answerPage(_ transport: ControlledTransport, _ index: Int, _ page: [Item], number: Int, pages: Int = 3) {
        transport.answer(
            index, .success(HTTPResponse(statusCode: 200, body: envelope(page, page: number, totalPages: pages))))
    }

    func answerItem(_ transport: ControlledTransport, _ index: Int, _ item: Item) {
        transport.answer(index, .success(HTTPResponse(statusCode: 200, body: try! JSONEncoder().encode(item))))
    }

    /// A list with page 1 of 3 loaded.
    func loadedList() async throws -> (ListResource<RemoteItems>, ControlledTransport) {
        let transport = ControlledTransport()
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        let load = Task { try await list.loadNextPage() }
        try await transport.waitForRequests(1)
        answerPage(transport, 0, items(0..<10), number: 1)
        _ = try await load.value
        return (list, transport)
    }

    @Test func cancelledRefreshRestoresTheExactStateAndThePageInFlightStillLands() async throws {
        let (list, transport) = try await loadedList()
        let next = Task { try await list.loadNextPage() }
        try await transport.waitForRequests(2)
        let before = list.listState
        #expect(before.pagination.isLoadingNextPage)
        let refresh = Task { try await list.refresh() }
        try await transport.waitForRequests(3)
        // The refresh shows only that the first page reloads; the page in flight is still loading.
        #expect(list.listState.content == .loading(previous: items(0..<10)))
        #expect(list.pagination == before.pagination)
        refresh.cancel()
        await #expect(throws: NetworkError.cancelled) { try await refresh.value }
        #expect(list.listState == before)
        try await transport.waitUntilFinished(2)
        #expect(transport.cancelledRequests == [2])
        answerPage(transport, 1, items(10..<20), number: 2)
        #expect(try await next.value == items(0..<20))
        #expect(list.pagination == PaginationStatus(hasMore: true, pagesLoaded: 2))
    }

    @Test func cancelledRefreshRestoresAFailedPageAndItsError() async throws {
        let (list, transport) = try await loadedList()
        let failing = Task { try await list.loadNextPage() }
        try await transport.waitForRequests(2)
        transport.answer(1, json: "{}", status: 500)
        await #expect(throws: NetworkError.self) { try await failing.value }
        let before = list.listState
        #expect(before.pagination.nextPageError?.statusCode == 500)
        #expect(before.content.error?.statusCode == 500)
        let refresh = Task { try await list.refresh() }
        try await transport.waitForRequests(3)
        refresh.cancel()
        await #expect(throws: NetworkError.cancelled) { try await refresh.value }
        #expect(list.listState == before)
    }

    @Test func mutationDuringARefreshAppliesToThePreviousItemsAndSurvivesTheOlderPage() async throws {
        let (list, transport) = try await loadedList()
        let recorder = list.recordStates()
        let refresh = Task { try await list.refresh() }
        try await transport.waitForRequests(2)
        let edited = Item(id: "i003", n: 300)
        let update = Task { try await list.update(edited) }
        try await transport.waitForRequests(3)
        answerItem(transport, 2, edited)
        #expect(try await update.value == edited)
        var patched = items(0..<10)
        patched[3] = edited
        #expect(list.state == .loading(previous: patched))
        // The refresh was sent before the update: its copy of i003 is older and must not come back.
        answerPage(transport, 1, items(0..<10), number: 1)
        #expect(try await refresh.value == patched)
        let pagination = PaginationStatus(hasMore: true, pagesLoaded: 1)
        try await recorder.expect([
            ListState(content: .available(items(0..<10)), pagination: pagination),
            ListState(content: .loading(previous: items(0..<10)), pagination: pagination),
            ListState(content: .loading(previous: patched), pagination: pagination),
            ListState(content: .available(patched), pagination: pagination),
        ])
    }

    /// A loaded list with a refresh in flight (request 1) and a create completed after it was sent.
    func refreshOlderThanACreate() async throws -> (
        ListResource<RemoteItems>, ControlledTransport, Task<[Item], any Error>, Item
    ) {
        let (list, transport) = try await loadedList()
        let older = Task { try await list.refresh() }
        try await transport.waitForRequests(2)
        let created = Item(id: "new", n: 99)
        let create = Task { try await list.create(created) }
        try await transport.waitForRequests(3)
        answerItem(transport, 2, created)
        _ = try await create.value
        return (list, transport, older, created)
    }

    @Test func refreshAskedAfterACreateNeverJoinsAnOlderFirstPageLoad() async throws {
        let (list, transport, older, created) = try await refreshOlderThanACreate()
        let newer = Task { try await list.refresh() }
        try await transport.waitForRequests(4)
        #expect(transport.requests.map(\.httpMethod) == ["GET", "GET", "POST", "GET"])
        answerPage(transport, 3, [created] + items(0..<9), number: 1)
        #expect(try await newer.value.contains(created))
        // The older load answers last, without the created item: it does not land.
        answerPage(transport, 1, items(0..<10), number: 1)
        _ = try await older.value
        #expect(list.items == [created] + items(0..<9))
    }

    @Test func olderFirstPageThatAnswersFirstKeepsTheCreatedItem() async throws {
        let (_, transport, older, created) = try await refreshOlderThanACreate()
        answerPage(transport, 1, items(0..<10), number: 1)
        #expect(try await older.value == items(0..<10) + [created])
    }

    @Test func concurrentNextPageCallersNeverFetchAPageTwice() async throws {
        final class CountingTransport: HTTPTransport {
            let pages = Locked<[Int: Int]>([:])
            func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
                let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
                let page = Int(query.first { $0.name == "page" }?.value ?? "") ?? 0
                pages.withLock { $0[page, default: 0] += 1 }
                let range = (page - 1) * 10..<page * 10
                return HTTPResponse(statusCode: 200, body: envelope(items(range), page: page, totalPages: 50))
            }
        }
        for _ in 0..<2000 {
            let transport = CountingTransport()
            let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { _ = try? await list.loadNextPage() } }
            }
            let counts = transport.pages.withLock { $0 }
            #expect(counts.values.allSatisfy { $0 == 1 }, "pages fetched: \(counts)")
            #expect(list.pagination.pagesLoaded == counts.count)
        }
    }

    @Test func pageOfTheOldListIsSupersededAndNeverSharedAfterARefresh() async throws {
        let (list, transport) = try await loadedList()
        let old = Task { try await list.loadNextPage() }
        try await transport.waitForRequests(2)
        let refresh = Task { try await list.refresh() }
        try await transport.waitForRequests(3)
        answerPage(transport, 2, items(100..<110), number: 1)
        _ = try await refresh.value
        await #expect(throws: NetworkError.superseded) { try await old.value }
        try await transport.waitUntilFinished(1)
        #expect(transport.cancelledRequests == [1])
        let next = Task { try await list.loadNextPage() }
        try await transport.waitForRequests(4)
        #expect(transport.requests[3].url?.query?.contains("page=2") == true)
        answerPage(transport, 3, items(110..<120), number: 2)
        #expect(try await next.value == items(100..<120))
    }

    @Test func loadAllNeverLoadsPastItsCap() async throws {
        let backend = try backend(with: 50)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadAll(maxPages: 2)
        #expect(list.pagination.pagesLoaded == 2)
        #expect(backend.requestLog.count == 2)
        try await list.loadAll(maxPages: 2)
        #expect(backend.requestLog.count == 2)
        try await list.loadAll(maxPages: 3)
        #expect(list.pagination.pagesLoaded == 3)
        await #expect(throws: NetworkError.invalidRequest("loadAll(maxPages:) needs at least 1 page, not 0")) {
            try await list.loadAll(maxPages: 0)
        }
    }

    /// `loadAll(maxPages:)` loads none once the list holds that many: a list that holds more keeps them.
    @Test func loadAllBelowWhatTheListHoldsLoadsNothing() async throws {
        let backend = try backend(with: 50)
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: ())
        try await list.loadAll(maxPages: 3)
        try await list.loadAll(maxPages: 2)
        #expect(list.pagination.pagesLoaded == 3)
        #expect(backend.requestLog.count == 3)
    }

    /// A cursor list whose pages go first → a → b → a …, one item each.
    func cursorCycle() -> StubTransport {
        let stub = StubTransport()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = request.url?.query ?? ""
            let body =
                query.contains("cursor=a")
                ? #"{"items":[{"id":"2","n":2}],"nextCursor":"b"}"#
                : query.contains("cursor=b")
                    ? #"{"items":[{"id":"3","n":3}],"nextCursor":"a"}"#
                    : #"{"items":[{"id":"1","n":1}],"nextCursor":"a"}"#
            return HTTPResponse(statusCode: 200, body: Data(body.utf8))
        }
        return stub
    }

    /// A page sequence ends a cycle as a list does: the page that leads back is the last one given, then
    /// the iteration throws.
    @Test func cursorCycleEndsAPageSequenceWithAnError() async throws {
        let stub = cursorCycle()
        let pages = makeSession(stub).pages(
            Endpoint(.get, "items"), pagination: CursorPagination(pageSize: 1), as: CursorEnvelope<Item>.self)
        var seen: [(ids: [String], hasMore: Bool)] = []
        do {
            for try await page in pages { seen.append((page.items.map(\.id), page.hasMore)) }
            Issue.record("the cycle ended without an error")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(seen.map(\.ids) == [["1"], ["2"], ["3"]])
        #expect(seen.map(\.hasMore) == [true, true, false])
        #expect(stub.requestCount == 3)
    }

    @Test func cursorCycleEndsTheListWithAnError() async throws {
        struct RemoteCursorItems: Listable {
            typealias Value = Item
            typealias ListResponse = CursorEnvelope<Item>
            static let pagination = CursorPagination(pageSize: 1)
            static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "items") }
        }
        let stub = cursorCycle()
        let list = ListResource<RemoteCursorItems>(session: makeSession(stub), request: ())
        await #expect(throws: NetworkError.self) { try await list.loadAll() }
        #expect(list.items.map(\.id) == ["1", "2", "3"])
        #expect(list.pagination.hasMore == false)
        guard list.pagination.nextPageError?.code == .invalidResponse else {
            Issue.record("expected invalidResponse, got \(String(describing: list.pagination.nextPageError))")
            return
        }
        #expect(stub.requestCount == 3)
        // At the end now: no more requests.
        try await list.loadNextPage()
        #expect(stub.requestCount == 3)
    }

    @Test func linkCycleEndsTheListWithAnError() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/items") { request async throws(NetworkError) -> HTTPResponse in
            let query = request.url?.query ?? ""
            let (items, next) =
                query.contains("p=b")
                ? (#"[{"id":"b","n":2}]"#, "/api/items?p=a")
                : query.contains("p=a")
                    ? (#"[{"id":"a","n":1}]"#, "/api/items?p=b") : (#"[{"id":"0","n":0}]"#, "/api/items?p=a")
            return HTTPResponse(
                statusCode: 200, headers: ["Link": "<\(next)>; rel=\"next\""], body: Data(items.utf8), url: request.url)
        }
        let list = ListResource<RemoteLinkedItems>(session: makeSession(stub), request: ())
        await #expect(throws: NetworkError.self) { try await list.loadAll() }
        #expect(list.items.map(\.id) == ["0", "a", "b"])
        #expect(list.pagination.hasMore == false)
        #expect(stub.requestCount == 3)
    }

    @Test func pagesLoadedAtItsMaximumDoesNotTrap() async throws {
        let backend = try backend(with: 30)
        let state = ListState(
            content: .available(items(0..<10)), pagination: PaginationStatus(hasMore: true, pagesLoaded: .max))
        let list = ListResource<RemoteItems>(session: makeSession(backend), request: (), state: state)
        try await list.loadNextPage()
        #expect(list.items == items(0..<10))
        try await list.loadNextPage()
        #expect(list.items == items(0..<20))
        #expect(list.pagination.pagesLoaded == 2)
    }
}
