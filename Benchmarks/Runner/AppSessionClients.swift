import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app as written on `URLSession` alone: every screen loads what it shows when it appears, through a model
/// of `URLCache` on the session's clock (see ``AppSessionWorkload`` for its rules).
final class PlainClient: AppClient {
    struct Entry {
        var data: Data
        var tag: String?
        var storedAt: ManualClock.Instant
        var maxAge: Duration
    }

    let baseURL: String
    let clock: ManualClock
    let session: URLSession
    /// The model of `URLCache`: kept across a relaunch, as its disk cache is.
    private let cache = Locked<[String: Entry]>([:])
    /// What the feed screen shows: the app's memory.
    private let feed = Locked<[SessionPost]>([])

    init(baseURL: String, clock: ManualClock) {
        self.baseURL = baseURL
        self.clock = clock
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// A `GET` through the cache: fresh answers without a request, stale ones revalidated, every one when
    /// `revalidate` says so.
    private func get(_ address: String, revalidate: Bool = false) async throws -> Data {
        let now = clock.now
        let cached = cache.withLock { $0[address] }
        if let cached, !revalidate, cached.storedAt.duration(to: now) < cached.maxAge { return cached.data }
        guard let url = URL(string: address) else { throw BenchmarkError("bad URL \(address)") }
        var request = URLRequest(url: url)
        if let tag = cached?.tag { request.setValue(tag, forHTTPHeaderField: "If-None-Match") }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw BenchmarkError("not HTTP") }
        if http.statusCode == 304, var entry = cached {
            entry.storedAt = now
            cache.withLock { $0[address] = entry }
            return entry.data
        }
        guard http.statusCode == 200 else { throw BenchmarkError("GET \(address): \(http.statusCode)") }
        let maxAge = (http.value(forHTTPHeaderField: "Cache-Control") ?? "").split(separator: ",").compactMap {
            part -> Int? in
            let field = part.trimmingCharacters(in: .whitespaces)
            return field.hasPrefix("max-age=") ? Int(field.dropFirst("max-age=".count)) : nil
        }.first
        let entry = Entry(
            data: data, tag: http.value(forHTTPHeaderField: "ETag"), storedAt: now,
            maxAge: .seconds(maxAge ?? 0))
        cache.withLock { $0[address] = entry }
        return data
    }

    private func loadFeed(revalidate: Bool) async throws -> [SessionPost] {
        var posts: [SessionPost] = []
        for page in 1...3 {
            let data = try await get("\(baseURL)/posts?page=\(page)&perPage=50", revalidate: revalidate)
            posts += try JSONDecoder().decode(PageEnvelope<SessionPost>.self, from: data).items
        }
        feed.withLock { $0 = posts }
        return posts
    }

    func openFeed() async throws -> [SessionPost] { try await loadFeed(revalidate: false) }

    func openPost(_ id: String) async throws -> SessionPost {
        try JSONDecoder().decode(SessionPost.self, from: try await get("\(baseURL)/posts/\(id)"))
    }

    func edit(_ post: SessionPost) async throws {
        let address = "\(baseURL)/posts/\(post.id)"
        let (_, response) = try await session.data(for: .patch(address, body: try JSONEncoder().encode(post)))
        guard let http = response as? HTTPURLResponse, (200..<300).contains(http.statusCode) else {
            throw BenchmarkError("PATCH \(address) failed")
        }
        // A successful unsafe method makes the cached answer of its URL stale (RFC 9111 §4.4).
        cache.withLock { $0[address] = nil }
    }

    func pullToRefresh() async throws -> [SessionPost] { try await loadFeed(revalidate: true) }

    func relaunch() async throws { feed.withLock { $0 = [] } }

    func shownFeed() async throws -> [SessionPost] { feed.withLock { $0 } }

    func settle() async {}
}

/// Posts as ResourceKit's app reads and edits them, fresh for the session's freshness.
struct RemoteSessionPost: Readable, Updatable {
    typealias Value = SessionPost
    typealias ReadRequest = String
    static let maxAge = AppSessionWorkload.freshness
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func updateEndpoint(for post: SessionPost) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(post)).appending(id: post.id)
    }
}

/// The feed, 50 posts a page.
struct RemoteSessionFeed: Listable {
    typealias Value = SessionPost
    typealias Item = SessionPost
    typealias ListResponse = PageEnvelope<SessionPost>
    static let pagination = PageNumberPagination(pageSize: 50)
    /// The server's list answers whole posts, as its reads do (One source of truth, "A holder made while…").
    static let itemsAreComplete = true
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}

/// The app as the README teaches it: a store on disk, its resources and lists (see ``AppSessionWorkload``).
final class KitClient: AppClient {
    private struct Launch {
        var store: ResourceStore
        var feed: ListResource<RemoteSessionFeed>
        /// When the feed was last loaded whole, on the session's clock.
        var feedLoadedAt: ManualClock.Instant?
        /// The post screens opened in this launch, which hold their resources.
        var posts: [String: Resource<RemoteSessionPost>] = [:]
        /// The feed's refresh in the background, while the screen shows what the list holds.
        var revalidation: Task<Void, Never>?
    }

    let baseURL: String
    let clock: ManualClock
    let directory: URL
    private let launch: Locked<Launch>

    init(baseURL: String, clock: ManualClock, directory: URL) throws {
        self.baseURL = baseURL
        self.clock = clock
        self.directory = directory
        launch = Locked(try Self.launch(baseURL: baseURL, clock: clock, directory: directory))
    }

    private static func launch(baseURL: String, clock: ManualClock, directory: URL) throws -> Launch {
        let session = NetworkSession(baseURL: baseURL, timeLimit: nil, clock: clock)
        // Ages on disk on the same clock as the session's freshness.
        let epoch = Date()
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory),
            now: { epoch.addingTimeInterval(TimeInterval(clock.now.offset.components.seconds)) })
        let store = ResourceStore(session: session, persistence: persistence)
        let feed = store.list(RemoteSessionFeed.self)
        var feedLoadedAt: ManualClock.Instant?
        if let age = feed.restoredAge { feedLoadedAt = clock.now.advanced(by: .zero - age) }
        return Launch(store: store, feed: feed, feedLoadedAt: feedLoadedAt)
    }

    private func loadFeedWhole(refreshing: Bool) async throws -> [SessionPost] {
        let feed = launch.withLock { $0.feed }
        if refreshing { _ = try await feed.refresh() } else { _ = try await feed.loadFirstPage() }
        while feed.items.count < 150, feed.pagination.hasMore { _ = try await feed.loadNextPage() }
        let now = clock.now
        launch.withLock { $0.feedLoadedAt = now }
        return feed.items
    }

    func openFeed() async throws -> [SessionPost] {
        let (feed, loadedAt) = launch.withLock { ($0.feed, $0.feedLoadedAt) }
        guard let loadedAt, !feed.items.isEmpty else { return try await loadFeedWhole(refreshing: false) }
        if loadedAt.duration(to: clock.now) >= AppSessionWorkload.freshness {
            // Stale: the screen shows the list's items at once (its state is `loading(previous:)`) while the
            // pages reload, as `.staleWhileRevalidate` does for a post.
            let refresh = Task { _ = try? await self.loadFeedWhole(refreshing: true) }
            launch.withLock { $0.revalidation = refresh }
        }
        return feed.items
    }

    func openPost(_ id: String) async throws -> SessionPost {
        let post = launch.withLock { launch in
            if let held = launch.posts[id] { return held }
            let made = launch.store.resource(RemoteSessionPost.self, id: id)
            launch.posts[id] = made
            return made
        }
        return try await post.read(id, policy: .staleWhileRevalidate)
    }

    func edit(_ post: SessionPost) async throws {
        let resource = launch.withLock { $0.store.resource(RemoteSessionPost.self, id: post.id) }
        try await resource.update(post)
    }

    func pullToRefresh() async throws -> [SessionPost] { try await loadFeedWhole(refreshing: true) }

    func relaunch() async throws {
        await launch.withLock { $0.store }.persistence?.flush()
        let next = try Self.launch(baseURL: baseURL, clock: clock, directory: directory)
        launch.withLock { $0 = next }
    }

    func shownFeed() async throws -> [SessionPost] { launch.withLock { $0.feed.items } }

    func settle() async {
        await launch.withLock({ $0.revalidation })?.value
        for post in launch.withLock({ Array($0.posts.values) }) {
            for await state in post.states where !state.isLoading { break }
        }
    }
}
