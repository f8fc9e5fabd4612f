import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// The order rule across holders: an answer asked before a change completed elsewhere never lands over it.
@Suite(.timeLimit(.minutes(1))) struct StoreOrderTests {
    let transport = ControlledTransport()
    let store: ResourceStore
    let edited = Post(id: "42", title: "Edited")

    init() {
        store = ResourceStore(session: makeTimelessSession(transport))
    }

    @Test func aPageSentBeforeAnUpdateDoesNotBringTheOldItemBack() async throws {
        let detail = store.resource(RemotePost.self, id: "42")
        let list = store.list(RemoteFeed.self, request: "all")
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(1)
        let update = Task { try await detail.update(edited) }
        try await transport.waitForRequests(2)
        transport.answer(1, .success(postResponse(edited)))
        #expect(try await update.value == edited)
        // The page was sent before the update completed: its copy of post 42 is older.
        transport.answer(0, .success(feedPage(storePosts)))
        #expect(try await load.value == [storePosts[0], edited, storePosts[2]])
        #expect(detail.state == .available(edited))
    }

    @Test func aPageSentAfterTheUpdateWins() async throws {
        let detail = store.resource(RemotePost.self, id: "42")
        let list = store.list(RemoteFeed.self, request: "all")
        let update = Task { try await detail.update(edited) }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(postResponse(edited)))
        _ = try await update.value
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(2)
        let newer = Post(id: "42", title: "Changed again on the server")
        transport.answer(1, .success(feedPage([storePosts[0], newer])))
        #expect(try await load.value == [storePosts[0], newer])
        // The page is the newest answer about post 42: the detail shows it too, without a request.
        #expect(detail.state == .available(newer))
        #expect(transport.requestCount == 2)
    }

    @Test func aReadAskedBeforeAPageLandedDoesNotOverwriteIt() async throws {
        let detail = store.resource(RemotePost.self, id: "42")
        let list = store.list(RemoteFeed.self, request: "all")
        let recorder = detail.recordStates()
        let read = Task { try await detail.read("42") }
        try await transport.waitForRequests(1)
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(2)
        let newer = Post(id: "42", title: "Newer")
        transport.answer(1, .success(feedPage([newer])))
        _ = try await load.value
        transport.answer(0, .success(postResponse(storePosts[1])))
        // The caller gets its own answer; the state keeps the newer one, in the detail and in the list.
        #expect(try await read.value == storePosts[1])
        #expect(detail.state == .available(newer))
        #expect(list.items == [newer])
        #expect(try await recorder.waitForCount(3) == [.idle, .loading(previous: nil), .available(newer)])
    }

    @Test func anUpdateThroughAListReachesTheDetailAndStopsAnOlderReadFromLanding() async throws {
        let detail = store.resource(RemotePost.self, id: "42")
        let list = store.list(RemoteFeed.self, request: "all")
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(feedPage(storePosts)))
        _ = try await load.value
        #expect(detail.state == .available(storePosts[1]))
        let read = Task { try await detail.read("42") }
        try await transport.waitForRequests(2)
        let update = Task { try await list.update(edited) }
        try await transport.waitForRequests(3)
        transport.answer(2, .success(postResponse(edited)))
        _ = try await update.value
        #expect(detail.state == .available(edited))
        transport.answer(1, .success(postResponse(storePosts[1])))
        _ = try await read.value
        #expect(detail.state == .available(edited))
        // A read asked now is not joined to the one sent before the update.
        let fresh = Task { try await detail.read("42") }
        try await transport.waitForRequests(4)
        transport.answer(3, .success(postResponse(edited)))
        #expect(try await fresh.value == edited)
    }

    @Test func aCreateIsPlacedOnlyWhereTheListAsksForIt() async throws {
        let all = store.list(RemoteFeed.self, request: "all")
        let latest = store.list(RemoteFeed.self, request: "latest")
        let oldest = store.list(RemoteFeed.self, request: "oldest")
        let unloaded = store.list(RemoteFeed.self, request: "latest-unloaded")
        for (index, list) in [all, latest, oldest].enumerated() {
            let load = Task { try await list.loadFirstPage() }
            try await transport.waitForRequests(index + 1)
            transport.answer(index, .success(feedPage(storePosts)))
            _ = try await load.value
        }
        let created = Post(id: "44", title: "New")
        let creator = Resource<RemotePost>(session: store.session)
        // A resource outside the store tells nobody.
        let outside = Task { try await creator.create(created) }
        try await transport.waitForRequests(4)
        transport.answer(3, .success(postResponse(created)))
        _ = try await outside.value
        #expect(latest.items == storePosts)
        let inside = Task { try await store.resource(RemotePost.self, id: "44").create(created) }
        try await transport.waitForRequests(5)
        transport.answer(4, .success(postResponse(created)))
        _ = try await inside.value
        #expect(latest.items == [created] + storePosts)
        #expect(oldest.items == storePosts + [created])
        #expect(all.items == storePosts)
        // A list with no page loaded has nowhere to put it: its first page will say.
        #expect(unloaded.listState == ListState())
        // A create through a list reaches the others the same way.
        let second = Post(id: "45", title: "Newer")
        let viaList = Task { try await all.create(second) }
        try await transport.waitForRequests(6)
        transport.answer(5, .success(postResponse(second)))
        _ = try await viaList.value
        #expect(all.items == storePosts + [second])
        #expect(latest.items == [second, created] + storePosts)
        #expect(oldest.items == storePosts + [created, second])
    }
}
