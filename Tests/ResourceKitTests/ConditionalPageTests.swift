import Foundation
import ResourceKit
import ResourceKitTesting
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A list loads a page again with the validators its last answer had, and a `304 Not Modified` answers with
/// the page it kept.
@Suite(.timeLimit(.minutes(1))) struct ConditionalPageTests {
    let transport = ControlledTransport()

    func page(_ items: [Item], number: Int, tag: String? = nil, modified: String? = nil) -> ControlledTransport.Answer {
        var headers: HTTPHeaders = [:]
        if let tag { headers["ETag"] = tag }
        if let modified { headers["Last-Modified"] = modified }
        return .success(
            HTTPResponse(statusCode: 200, headers: headers, body: envelope(items, page: number, totalPages: 2)))
    }

    func notModified(tag: String) -> ControlledTransport.Answer {
        .success(HTTPResponse(statusCode: 304, headers: ["ETag": tag], body: Data()))
    }

    func header(_ name: String, of index: Int) -> String? { transport.requests[index].value(forHTTPHeaderField: name) }

    @Test func aPageTheServerStillHasCostsA304AndTheListShowsWhatItKept() async throws {
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        transport.answer(0, page(items(0..<10), number: 1, tag: "\"p1\""))
        transport.answer(1, page(items(10..<20), number: 2, tag: "\"p2\""))
        try await list.loadNextPage()
        try await list.loadNextPage()
        let recorder = list.recordStates()
        transport.answer(2, notModified(tag: "\"p1\""))
        #expect(try await list.refresh() == items(0..<10))
        transport.answer(3, notModified(tag: "\"p2\""))
        #expect(try await list.loadNextPage() == items(0..<20))
        #expect(header("If-None-Match", of: 0) == nil)
        #expect(header("If-None-Match", of: 1) == nil)
        #expect(header("If-None-Match", of: 2) == "\"p1\"")
        #expect(header("If-None-Match", of: 3) == "\"p2\"")
        let one = ListState(
            content: .available(items(0..<10)), pagination: PaginationStatus(hasMore: true, pagesLoaded: 1))
        let two = ListState(
            content: .available(items(0..<20)), pagination: PaginationStatus(hasMore: false, pagesLoaded: 2))
        var refreshing = two
        refreshing.content = .loading(previous: items(0..<20))
        var loadingNext = one
        loadingNext.pagination.isLoadingNextPage = true
        #expect(try await recorder.waitForCount(5) == [two, refreshing, one, loadingNext, two])
    }

    @Test func aChangedPageReplacesTheOneKeptAndItsValidators() async throws {
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        transport.answer(0, page(items(0..<10), number: 1, tag: "\"old\""))
        try await list.loadFirstPage()
        transport.answer(1, page(items(5..<15), number: 1, tag: "\"new\""))
        #expect(try await list.refresh() == items(5..<15))
        transport.answer(2, notModified(tag: "\"new\""))
        #expect(try await list.refresh() == items(5..<15))
        #expect(header("If-None-Match", of: 1) == "\"old\"")
        #expect(header("If-None-Match", of: 2) == "\"new\"")
        // An answer without validators forgets them: the next load asks without a condition.
        transport.answer(3, page(items(0..<3), number: 1))
        try await list.refresh()
        transport.answer(4, page(items(0..<3), number: 1))
        try await list.refresh()
        #expect(header("If-None-Match", of: 4) == nil)
    }

    @Test func aPageWithOnlyADateIsAskedForIfModifiedSince() async throws {
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        let date = "Sun, 06 Dec 2026 06:00:00 GMT"
        transport.answer(0, page(items(0..<10), number: 1, modified: date))
        try await list.loadFirstPage()
        transport.answer(1, .success(HTTPResponse(statusCode: 304, body: Data())))
        #expect(try await list.refresh() == items(0..<10))
        #expect(header("If-Modified-Since", of: 1) == date)
        #expect(header("If-None-Match", of: 1) == nil)
    }

    @Test func aNotModifiedNobodyAskedForIsAFailureAndTheListKeepsItsItems() async throws {
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        transport.answer(0, page(items(0..<10), number: 1))
        try await list.loadFirstPage()
        transport.answer(1, .success(HTTPResponse(statusCode: 304, body: Data())))
        await #expect(throws: NetworkError.self) { try await list.refresh() }
        #expect(list.items == items(0..<10))
        #expect(list.listState.content.error != nil)
    }

    @Test func aPageSequenceNeverAsksConditionally() async throws {
        let session = makeSession(transport)
        transport.answer(0, page(items(0..<10), number: 1, tag: "\"p1\""))
        transport.answer(1, page(items(10..<20), number: 2, tag: "\"p2\""))
        transport.answer(2, page(items(0..<10), number: 1, tag: "\"p1\""))
        transport.answer(3, page(items(10..<20), number: 2, tag: "\"p2\""))
        for _ in 0..<2 {
            var count = 0
            for try await page in session.pages(of: RemoteItems.self) { count += page.items.count }
            #expect(count == 20)
        }
        #expect((0..<4).allSatisfy { header("If-None-Match", of: $0) == nil })
    }

    @Test func a304ForAPageReplacedMeanwhileIsAFailureNotAnOlderPage() async throws {
        let list = ListResource<RemoteItems>(session: makeSession(transport), request: ())
        transport.answer(0, page(items(0..<10), number: 1, tag: "\"p1\""))
        try await list.loadFirstPage()
        // A refresh with "p1" in flight; an update completes; a second refresh (it does not join the first,
        // which was sent before the update) goes with "p1" too.
        let first = Task { try await list.refresh() }
        try await transport.waitForRequests(2)
        var edited = items(3..<4)[0]
        edited.n = 300
        transport.answer(2, .success(HTTPResponse(statusCode: 200, body: try JSONEncoder().encode(edited))))
        try await list.update(edited)
        let second = Task { try await list.refresh() }
        try await transport.waitForRequests(4)
        #expect(header("If-None-Match", of: 1) == "\"p1\"")
        #expect(header("If-None-Match", of: 3) == "\"p1\"")
        // The first answers a new page, "p2"; the second's 304 is for "p1", whose page is no longer kept.
        var changed = items(0..<10)
        changed[3] = edited
        transport.answer(1, page(changed, number: 1, tag: "\"p2\""))
        #expect(try await first.value == changed)
        transport.answer(3, notModified(tag: "\"p1\""))
        let gone = NetworkError.invalidResponse("a 304 Not Modified for a page whose answer is no longer kept")
        await #expect(throws: gone) { try await second.value }
        #expect(list.items == changed)
        // The next refresh asks with "p2".
        transport.answer(4, notModified(tag: "\"p2\""))
        #expect(try await list.refresh() == changed)
        #expect(header("If-None-Match", of: 4) == "\"p2\"")
    }
}
