// What ResourceKit does, on an embedded in-memory backend or on a real PocketBase:
//   swift run Example
//   swift run Example --base-url http://127.0.0.1:8090 --email admin@resourcekit.test --password …
//   swift run Example --store DIRECTORY   (twice: the second run starts from disk and replays an offline edit,
//                                          which conflicts with another device's edit and is resolved)
import Foundation
import ResourceKit
import ResourceKitPocketBase
import ResourceKitTesting
import ResourceKitTransfer
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Post: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
}

struct NewPost: Codable, Sendable {
    var title: String
    var body: String
}

/// One post: `/api/collections/posts/records/<id>`.
struct RemotePost: Readable, Creatable, Updatable, Deletable {
    typealias Value = Post
    typealias ReadRequest = String
    typealias CreateRequest = NewPost
    typealias DeleteRequest = Post

    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts/records").appending(id: id) }
    static func createEndpoint(for post: NewPost) -> Endpoint { Endpoint(.post, "posts/records", body: .json(post)) }
    static func updateEndpoint(for post: Post) -> Endpoint {
        Endpoint(.patch, "posts/records", body: .json(post)).appending(id: post.id)
    }
    static func deleteEndpoint(for post: Post) -> Endpoint { Endpoint(.delete, "posts/records").appending(id: post.id) }
}

/// All posts, 50 per page, in PocketBase's page envelope.
struct RemotePosts: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static func listEndpoint(for request: Void) -> Endpoint {
        Endpoint(.get, "posts/records", query: ["sort": "position"])
    }
}

/// A service that logs every state its post goes through, the way an app's data layer would.
struct PostWatcher {
    let post: Resource<RemotePost>

    /// Subscribes now, so the first state logged is the current one.
    func start(until isDone: @escaping @Sendable (ResourceState<Post>) -> Bool) -> Task<Void, Never> {
        let states = post.states
        return Task {
            for await state in states {
                print("  [watcher] \(describe(state))")
                if isDone(state) { return }
            }
        }
    }

    func describe(_ state: ResourceState<Post>) -> String {
        switch state {
        case .idle: "idle"
        case .loading(let previous): "loading (showing \(previous.map { "\"\($0.title)\"" } ?? "nothing"))"
        case .available(let post): "available \"\(post.title)\""
        case .failure(let error, let previous):
            "failure: \(error.short) (still showing \(previous.map { "\"\($0.title)\"" } ?? "nothing"))"
        }
    }
}

extension NetworkError {
    var short: String {
        guard let error = serverError else { return description }
        let fields = error.fieldErrors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return "\(error.status) \(error.message)" + (fields.isEmpty ? "" : " [\(fields.joined(separator: "; "))]")
    }
}

// MARK: - Configuration

struct Options {
    var baseURL: String?
    var token: String?
    var email: String?
    var password: String?
    var inspect = false
    /// Where the eighth job keeps its store between runs.
    var store: String?

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--base-url": baseURL = iterator.next()
            case "--token": token = iterator.next()
            case "--email": email = iterator.next()
            case "--password": password = iterator.next()
            case "--inspect": inspect = true
            case "--store": store = iterator.next()
            case "--help", "-h":
                print(
                    "usage: swift run Example [--inspect] [--store DIRECTORY] [--base-url URL [--token TOKEN | --email E --password P]]"
                )
                exit(0)
            default: throw ExampleError("unknown argument \(argument); try --help")
            }
        }
    }
}

struct ExampleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func makeSession(_ options: Options) async throws -> NetworkSession {
    guard let baseURL = options.baseURL else {
        let backend = InMemoryBackend(basePath: "/api/collections/{collection}/records")
        backend.addCollection("posts", requiredFields: ["title"])
        backend.addCollection("attachments", requiredFields: ["title"])
        filesOrigin = "http://embedded.resourcekit"
        try backend.seed(
            (1...120).map { NewPost(title: "Post \($0)", body: "Body of post \($0)") }, into: "posts")
        print("Backend: embedded InMemoryBackend, 120 posts (pass --base-url to use a real server)")
        slowDown = { backend.setLatency($0) }
        serveFile = { data, path in backend.serve(data, at: path) }
        cutNextBody = { backend.injectFault(.truncatedBody) }
        backend.serveRealtime(at: "/api/realtime")
        secondDevice = { adapters in
            (
                NetworkSession(
                    baseURL: "http://embedded.resourcekit/api/collections", validation: PocketBaseValidation(),
                    transport: backend, adapters: adapters),
                NetworkSession(
                    baseURL: "http://embedded.resourcekit/api", validation: PocketBaseValidation(), transport: backend)
            )
        }
        offlineDevice = { transport, adapters in
            NetworkSession(
                baseURL: "http://embedded.resourcekit/api/collections", validation: PocketBaseValidation(),
                transport: Switchable(backend, transport), adapters: adapters)
        }
        return NetworkSession(
            baseURL: "http://embedded.resourcekit/api/collections", validation: PocketBaseValidation(),
            transport: backend)
    }
    print("Backend: \(baseURL)")
    filesOrigin = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    let base = baseURL.hasSuffix("/") ? baseURL + "api/collections" : baseURL + "/api/collections"
    var token = options.token
    if token == nil, let email = options.email, let password = options.password {
        struct Auth: Decodable { var token: String }
        let auth: Auth = try await NetworkSession(baseURL: base, validation: PocketBaseValidation()).send(
            Endpoint(.post, "_superusers/auth-with-password", body: .json(["identity": email, "password": password])))
        token = auth.token
    }
    let adapters: [any RequestAdapting] = token.map { [BearerTokenAdapter(token: $0)] } ?? []
    let api = baseURL.hasSuffix("/") ? baseURL + "api" : baseURL + "/api"
    secondDevice = { counting in
        (
            NetworkSession(baseURL: base, validation: PocketBaseValidation(), adapters: adapters + counting),
            // PocketBase sends nothing between events: the stream's inactivity timeout must outlast the quiet.
            NetworkSession(
                baseURL: api, validation: PocketBaseValidation(),
                transport: URLSessionTransport(timeout: .seconds(3_600)), adapters: adapters)
        )
    }
    offlineDevice = { switchable, counting in
        NetworkSession(
            baseURL: base, validation: PocketBaseValidation(), transport: Switchable(URLSessionTransport(), switchable),
            adapters: adapters + counting)
    }
    return NetworkSession(baseURL: base, validation: PocketBaseValidation(), adapters: adapters)
}

// MARK: - Lists, observation, CRUD

func paginate(_ session: NetworkSession) async throws -> [Post] {
    print("\n1. Paginating a list")
    let posts = ListResource<RemotePosts>(session: session, request: ())
    repeat {
        try await posts.loadNextPage()
        let status = posts.pagination
        let pages = status.totalCount.map { "\(($0 + 49) / 50)" } ?? "?"
        print("  page \(status.pagesLoaded) of \(pages), \(posts.items.count) posts so far")
    } while posts.pagination.hasMore
    try await posts.loadNextPage()
    print("  end of list: \(posts.items.count) posts, no further request")
    var pageCount = 0
    var itemCount = 0
    for try await page in session.pages(of: RemotePosts.self) {
        pageCount += 1
        itemCount += page.items.count
    }
    print("  the same list as a page sequence: \(pageCount) pages, \(itemCount) posts, one page in memory at a time")
    return posts.items
}

func observe(_ session: NetworkSession, first: Post) async throws {
    print("\n2. A service observing a resource's state stream")
    let post = Resource<RemotePost>(session: session)
    let watcher = PostWatcher(post: post)
    let watching = watcher.start { $0.error != nil }
    try await post.read(first.id)
    try await post.read(first.id)
    var failure: NetworkError?
    do {
        try await post.read("missingrecord00")
    } catch {
        failure = error
    }
    await watching.value
    print("  the read of a missing post threw: \(failure?.short ?? "nothing")")
}

func crud(_ session: NetworkSession) async throws {
    print("\n3. Create, update and delete")
    let post = Resource<RemotePost>(session: session)
    let created = try await post.create(NewPost(title: "Hello from ResourceKit", body: "Created by the example"))
    print("  created \"\(created.title)\"")
    var edited = created
    edited.title = "Hello again"
    let updated = try await post.update(edited)
    print("  updated to \"\(updated.title)\"")
    try await post.delete()
    print("  deleted; state is now \(post.state)")
    do {
        try await post.create(NewPost(title: "", body: "A post without a title"))
    } catch {
        print("  creating a post without a title was rejected: \(error.short)")
        print("  the resource shows it: \(post.state.error.map { _ in "failure" } ?? "no error")")
    }
}

// MARK: - One source of truth

/// The post screen's service: the post it shows.
struct PostDetailService {
    let post: Resource<RemotePost>

    init(store: ResourceStore, id: String) {
        post = store.resource(RemotePost.self, id: id)
    }
}

/// The feed's service: the first page of posts.
struct FeedService {
    let feed: ListResource<RemotePosts>

    init(store: ResourceStore) {
        feed = store.list(RemotePosts.self)
    }

    func title(of id: String) -> String { feed.items.first { $0.id == id }.map { "\"\($0.title)\"" } ?? "nothing" }
}

func shareOnePost(_ session: NetworkSession, first: Post, inspector: Inspector?) async throws {
    print("\n4. One source of truth: two services share one post")
    let store = ResourceStore(session: session)
    let feed = FeedService(store: store)
    try await feed.feed.loadFirstPage()
    let detail = PostDetailService(store: store, id: first.id)
    let again = PostDetailService(store: store, id: first.id)
    print("  both detail services hold the same object: \(detail.post === again.post)")
    print(
        "  it starts from the feed's copy, with no request: \(PostWatcher(post: detail.post).describe(detail.post.state))"
    )

    guard var edited = detail.post.value else { throw ExampleError("the feed did not hold post \(first.id)") }
    edited.title = "Edited once, shown everywhere"
    try await detail.post.update(edited)
    print("  updated through the detail; the feed shows \(feed.title(of: first.id)) without reloading")

    // An optimistic edit the server refuses (a post needs a title): shown at once, then rolled back.
    let feedStates = feed.feed.recordStates()
    var refused = edited
    refused.title = ""
    do {
        try await detail.post.update(refused, optimistic: refused)
    } catch {
        print("  the optimistic edit was refused: \(error.short)")
    }
    let seen = try await feedStates.waitForCount(3).map { state in
        state.items.first { $0.id == first.id }.map { "\"\($0.title)\"" } ?? "nothing"
    }
    print("  the feed showed \(seen.joined(separator: " → ")): rolled back exactly")
    print(
        "  the detail shows the failure over the kept value: \(PostWatcher(post: detail.post).describe(detail.post.state))"
    )
    guard let inspector else { return }
    await inspector.picture("after the refused edit", store: store)
    // Five screens ask for the post at once: one request, five callers, seen while it is in flight.
    slowDown?(.milliseconds(300))
    let readers = (0..<5).map { _ in Task { try await detail.post.read(first.id) } }
    while detail.post.waitingCallerCount < 5 { await Task.yield() }
    // The embedded backend holds the request 300 ms: wait until it is in flight with its five callers, not only
    // asked for, so a busy machine shows it (for 5 s at most). A real server answers when it does.
    let deadline = ContinuousClock.now + .seconds(5)
    while slowDown != nil, store.snapshot().session.requests.first?.callers != 5, ContinuousClock.now < deadline {
        await Task.yield()
    }
    await inspector.picture("five reads of one post in flight", store: store)
    for reader in readers { _ = try await reader.value }
    slowDown?(.zero)
    await inspector.picture("after the five reads", store: store)
}

/// Makes the embedded backend slow (`nil` against a real server), so the inspector can show a request in
/// flight.
nonisolated(unsafe) var slowDown: ((Duration) -> Void)?
/// Serves a file from the embedded backend, and cuts its next body (`nil` against a real server).
nonisolated(unsafe) var serveFile: ((Data, String) -> Void)?
nonisolated(unsafe) var cutNextBody: (() -> Void)?

// MARK: - Files

func download(_ session: NetworkSession) async throws {
    print("\n5. Downloading a file: cut, then resumed")
    guard let serveFile, let cutNextBody else {
        print("  skipped: the embedded backend serves the file")
        return
    }
    let original = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
    serveFile(original, "/api/collections/files/report.bin")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("example-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let destination = directory.appendingPathComponent("report.bin")
    cutNextBody()
    do {
        _ = try await session.download(Endpoint(.get, "files/report.bin"), to: destination)
    } catch {
        print("  the first try was cut: \(error.short)")
    }
    let progress = TransferProgress()
    let file = try await session.download(Endpoint(.get, "files/report.bin"), to: destination, progress: progress)
    print("  the second asked for the rest: \(file.statusCode), kept \(file.resumedFrom) of \(file.byteCount) bytes")
    print("  progress: \(progress.status)")
    print("  the file matches the server's: \(try Data(contentsOf: destination) == original ? "yes" : "no")")
}

/// A second device on the same server: a session for its store (with `counting` among its adapters) and one
/// for its realtime connection.
nonisolated(unsafe) var secondDevice: (([any RequestAdapting]) -> (NetworkSession, NetworkSession))?

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    let session = try await makeSession(options)
    let inspector = options.inspect ? Inspector(session: session) : nil
    let posts = try await paginate(session)
    await inspector?.picture("after paging")
    guard let first = posts.first else { throw ExampleError("the server has no posts") }
    try await observe(session, first: first)
    await inspector?.picture("after observing")
    try await crud(session)
    await inspector?.picture("after create, update and delete")
    try await shareOnePost(session, first: first, inspector: inspector)
    try await download(session)
    try await attach(session)
    try await liveData(session, first: first)
    if let directory = options.store { try await offlineAndPersistence(directory: directory) }
    print("\nDone.")
} catch {
    FileHandle.standardError.write(Data("Example failed: \(error)\n".utf8))
    exit(1)
}
