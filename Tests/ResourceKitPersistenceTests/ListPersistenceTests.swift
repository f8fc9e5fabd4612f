import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// A feed whose store keeps only its first two items.
struct ShortFeed: Listable, PersistedResource {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 3)
    static let persistedItemLimit = 2
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

/// A feed its store never keeps.
struct UnkeptFeed: Listable, PersistedResource {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static let persistedItemLimit = 0
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

@Suite(.timeLimit(.minutes(1)), .offThePool) struct ListPersistenceTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lists-\(UUID().uuidString)")
    let backend = InMemoryBackend(basePath: "/api")
    let wall = WallClock()
    let clock = ManualClock()
    let posts = (1...5).map { Post(id: "\($0)", title: "Post \($0)") }

    init() throws {
        backend.addCollection("posts")
        try backend.seed(posts, into: "posts")
    }

    func launch() throws -> ResourceStore {
        let wall = wall
        let persistence = StorePersistence(storage: try FileEntryStorage(directory: directory), now: { wall.now })
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil, clock: clock)
        return ResourceStore(session: session, persistence: persistence)
    }

    var requests: Int { backend.requestLog.count }

    @Test func aFeedAfterARestartShowsItsItemsBeforeAnyRequestAndSaysSo() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            let feed = store.list(RemoteFeed.self, request: "home")
            #expect(!feed.isRestored)
            try await feed.loadFirstPage()
            #expect(!feed.isRestored)
            await store.persistence?.flush()
        }
        wall.advance(by: 3)
        let store = try launch()
        let before = requests
        let feed = store.list(RemoteFeed.self, request: "home")
        #expect(feed.listState == ListState(content: .available(posts), pagination: PaginationStatus(pagesLoaded: 1)))
        #expect(feed.isRestored)
        #expect(feed.restoredAge == .seconds(3))
        #expect(requests == before)
        // Another request of the same type is another list: nothing kept for it.
        #expect(store.list(RemoteFeed.self, request: "other").state == .idle)
        // The first page replaces the restored items.
        try backend.seed([Post(id: "6", title: "Post 6")], into: "posts")
        let items = try await feed.refresh()
        #expect(items.count == 6)
        #expect(!feed.isRestored)
        #expect(feed.restoredAge == nil)
    }

    /// A list written again because news changed an item keeps the age of its first page: the restored age is
    /// the time since that page was loaded, not since the last write.
    @Test func newsDoesNotMakeAPersistedListNewer() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            let feed = store.list(RemoteFeed.self, request: "home")
            try await feed.loadFirstPage()
            await store.persistence?.flush()
            clock.advance(by: .seconds(3600))
            wall.advance(by: 3600)
            store.apply(.updated(Post(id: "2", title: "Pushed")), as: RemotePost.self)
            #expect(feed.items[1] == Post(id: "2", title: "Pushed"))
            await store.persistence?.flush()
        }
        wall.advance(by: 5)
        let store = try launch()
        let feed = store.list(RemoteFeed.self, request: "home")
        #expect(feed.items[1] == Post(id: "2", title: "Pushed"))
        #expect(feed.restoredAge == .seconds(3605))
    }

    @Test func genericCodeThatKnowsNothingOfCodableGetsAPersistedList() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await listAsGenericCodeAsks(store, RemoteFeed.self, request: "home").loadFirstPage()
            await store.persistence?.flush()
        }
        let store = try launch()
        let before = requests
        let feed = listAsGenericCodeAsks(store, RemoteFeed.self, request: "home")
        #expect(feed.isRestored)
        #expect(feed.items == posts)
        #expect(requests == before)
    }

    @Test func aRestoredListsNextPageLoadsItsFirstPage() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            let feed = store.list(ShortFeed.self)
            try await feed.loadFirstPage()
            try await feed.loadNextPage()
            #expect(feed.items.count == 5)
            await store.persistence?.flush()
        }
        let store = try launch()
        let feed = store.list(ShortFeed.self)
        // Only the first two items were kept.
        #expect(feed.items == Array(posts.prefix(2)))
        // The next page's cursor is not kept: the next page is the first page.
        backend.clearLog()
        let items = try await feed.loadNextPage()
        #expect(items == Array(posts.prefix(3)))
        #expect(backend.requestLog.map { $0.query["page"] } == ["1"])
    }

    @Test func aListWhoseTypeKeepsNothingStartsIdle() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await store.list(UnkeptFeed.self).loadFirstPage()
            await store.persistence?.flush()
        }
        #expect(try FileEntryStorage(directory: directory).allKeys().isEmpty)
        #expect(try launch().list(UnkeptFeed.self).state == .idle)
    }

    @Test func changesFromOtherHoldersArePersistedButNotOptimisticOnes() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            let feed = store.list(RemoteFeed.self, request: "home")
            try await feed.loadFirstPage()
            // An update through a resource reaches the list, and the list's entry.
            try await store.resource(RemotePost.self, id: "2").update(Post(id: "2", title: "Renamed"))
            // An optimistic change still in flight is not persisted.
            backend.setLatency(.seconds(30))
            let pending = Task {
                try await store.resource(RemotePost.self, id: "3").update(
                    Post(id: "3", title: "Never landed"), optimistic: Post(id: "3", title: "Never landed"))
            }
            try await waitUntil("the optimistic change shows") { feed.items.contains { $0.title == "Never landed" } }
            await store.persistence?.flush()
            pending.cancel()
            _ = await pending.result
        }
        backend.setLatency(.zero)
        let feed = try launch().list(RemoteFeed.self, request: "home")
        #expect(feed.items.map(\.title) == ["Post 1", "Renamed", "Post 3", "Post 4", "Post 5"])
    }

    @Test func itemsThatNoLongerDecodeAreDroppedWithoutACrash() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch()
            try await store.list(RemoteFeed.self, request: "home").loadFirstPage()
            await store.persistence?.flush()
        }
        let storage = try FileEntryStorage(directory: directory)
        let key = try #require(try storage.allKeys().first { $0.hasPrefix("list:") })
        try storage.store([PersistedEntry(key: key, value: Data(#"[{"id":1}]"#.utf8), loadedAt: Date())])
        let store = try launch()
        let feed = store.list(RemoteFeed.self, request: "home")
        #expect(feed.state == .idle)
        #expect(!feed.isRestored)
        await store.persistence?.flush()
        // Opened again: one storage per directory, and the store's own removed the entry.
        #expect(try FileEntryStorage(directory: directory).entry(for: key) == nil)
        #expect(try await feed.loadFirstPage() == posts)
    }

    @Test func wipeForgetsPersistedLists() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch()
        try await store.list(RemoteFeed.self, request: "home").loadFirstPage()
        await store.persistence?.flush()
        try await store.wipe()
        #expect(try launch().list(RemoteFeed.self, request: "home").state == .idle)
    }
}
