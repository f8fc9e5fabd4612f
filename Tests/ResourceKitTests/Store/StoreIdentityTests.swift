import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// One object per key, one request for concurrent readers, and one truth per item across live holders.
@Suite(.timeLimit(.minutes(1))) struct StoreIdentityTests {
    @Test func sameKeySameObjectAndOneRequestForAHundredReaders() async throws {
        let transport = ControlledTransport()
        let store = ResourceStore(session: makeTimelessSession(transport))
        let first = store.resource(RemotePost.self, id: "42")
        let second = store.resource(RemotePost.self, id: "42")
        #expect(first === second)
        #expect(store.resource(RemotePost.self, id: "43") !== first)
        #expect(store.resource(RemotePostPreview.self, id: "42") as AnyObject !== first)
        let reads = (0..<100).map { index in
            Task { try await (index.isMultiple(of: 2) ? first : second).read("42") }
        }
        try await waitUntil("100 callers wait") { first.waitingCallerCount == 100 }
        transport.answer(0, .success(postResponse(storePosts[1])))
        for read in reads { #expect(try await read.value == storePosts[1]) }
        #expect(transport.requestCount == 1)
    }

    @Test func releasingEveryReferenceFreesTheResourceAndTheList() async throws {
        let (store, _) = try makeStore(capacity: 0)
        weak var weakResource: Resource<RemotePost>?
        weak var weakList: ListResource<RemoteFeed>?
        do {
            let resource = store.resource(RemotePost.self, id: "42")
            let list = store.list(RemoteFeed.self, request: "all")
            try await resource.read("42")
            try await list.loadFirstPage()
            weakResource = resource
            weakList = list
            #expect(store.liveCount == 2)
            #expect(store.list(RemoteFeed.self, request: "all") === list)
        }
        await waitForLiveCount(0, in: store)
        #expect(weakResource == nil)
        #expect(weakList == nil)
        #expect(store.liveCount == 0)
        #expect(store.rememberedCount == 0)
        // A new object for the key, with nothing remembered: it starts idle.
        #expect(store.resource(RemotePost.self, id: "42").state == .idle)
    }

    @Test func aFreedResourceLeavesItsValueAndANewOneStartsFromIt() async throws {
        let (store, backend) = try makeStore()
        do { try await store.resource(RemotePost.self, id: "42").read("42") }
        await waitForLiveCount(0, in: store)
        #expect(store.liveCount == 0)
        #expect(store.rememberedCount == 1)
        let again = store.resource(RemotePost.self, id: "42")
        #expect(again.state == .available(storePosts[1]))
        #expect(backend.requestLog.count == 1)
    }

    @Test func anUpdateReachesTwoListsAndAnotherResourceOfTheItem() async throws {
        let (store, backend) = try makeStore()
        let detail = store.resource(RemotePost.self, id: "42")
        let preview = store.resource(RemotePostPreview.self, id: "42")
        let all = store.list(RemoteFeed.self, request: "all")
        let latest = store.list(RemoteFeed.self, request: "latest")
        try await detail.read("42")
        try await preview.read("42")
        try await all.loadFirstPage()
        try await latest.loadFirstPage()
        let recorders = (detail.recordStates(), preview.recordStates(), all.recordStates(), latest.recordStates())
        let requests = backend.requestLog.count
        var edited = storePosts[1]
        edited.title = "Edited"
        try await detail.update(edited)
        #expect(backend.requestLog.count == requests + 1)
        let listAfter = ListState(
            content: .available([storePosts[0], edited, storePosts[2]]),
            pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3))
        let listBefore = ListState(
            content: .available(storePosts), pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3)
        )
        #expect(
            try await recorders.0.waitForCount(3) == [
                .available(storePosts[1]), .loading(previous: storePosts[1]), .available(edited),
            ])
        #expect(try await recorders.1.waitForCount(2) == [.available(storePosts[1]), .available(edited)])
        #expect(try await recorders.2.waitForCount(2) == [listBefore, listAfter])
        #expect(try await recorders.3.waitForCount(2) == [listBefore, listAfter])

        try await all.delete(edited)
        let listGone = ListState(
            content: .available([storePosts[0], storePosts[2]]),
            pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: 3))
        #expect(try await recorders.0.waitForCount(4).last == .idle)
        #expect(try await recorders.1.waitForCount(3).last == .idle)
        // A list's own mutations do not show `loading`: the list changes when the server answers.
        #expect(try await recorders.2.waitForCount(3) == [listBefore, listAfter, listGone])
        #expect(try await recorders.3.waitForCount(3) == [listBefore, listAfter, listGone])
        #expect(backend.requestLog.count == requests + 2)
        // The holders must outlive the recorders' waits: an optimized build may free a value after its last use.
        extendLifetime((detail, preview, all, latest))
    }
}

/// Bad input on the store's entries: a clear error, never a crash or a wrong item spread.
@Suite(.timeLimit(.minutes(1))) struct StoreBadInputTests {
    @Test func aStoreResourceReadsOnlyItsOwnItem() async throws {
        let (store, backend) = try makeStore()
        let post = store.resource(RemotePost.self, id: "42")
        await #expect(throws: NetworkError.self) { try await post.read("43") }
        #expect(backend.requestLog.isEmpty)
        #expect(post.state == .idle)
    }

    @Test func anEmptyOrHostileIdFailsClearly() async throws {
        let (store, backend) = try makeStore()
        let empty = store.resource(RemotePost.self, id: "")
        await #expect(throws: NetworkError.invalidRequest("an empty id cannot be appended to 'posts'")) {
            try await empty.read("")
        }
        let hostile = store.resource(RemotePost.self, id: "../admin?x#y")
        await #expect(throws: NetworkError.self) { try await hostile.read("../admin?x#y") }
        #expect(backend.requestLog.map(\.path) == ["/api/posts/../admin?x#y"])
    }

    @Test func anAnswerAboutAnotherItemIsThatItemsNews() async throws {
        let (store, _) = try makeStore()
        let list = store.list(RemoteFeed.self, request: "all")
        try await list.loadFirstPage()
        let post = store.resource(RemotePost.self, id: "42")
        let other = store.resource(RemotePost.self, id: "43")
        // An update whose request names post 43: its answer is news of post 43, not of post 42.
        let edited = Post(id: "43", title: "Edited 43")
        try await post.update(edited)
        #expect(post.state == .available(edited))
        #expect(other.state == .available(edited))
        #expect(list.items == [storePosts[0], storePosts[1], edited])
    }

    @Test func invalidatingWithNothingLiveDoesNothing() async throws {
        let (store, backend) = try makeStore()
        await store.invalidate(RemotePost.self)
        await store.invalidate(RemotePost.self, id: "nope")
        await store.invalidate(RemotePost.self) { _ in true }
        #expect(backend.requestLog.isEmpty)
    }
}
