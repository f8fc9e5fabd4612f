import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport in front of another that drops what a server ignoring preconditions ignores (PocketBase), or
/// the validators of its answers (a server that sends none).
struct StrippingTransport: HTTPTransport {
    let base: any HTTPTransport
    var dropsPreconditions = false
    var dropsEntityTags = false

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var request = request
        if dropsPreconditions {
            request.setValue(nil, forHTTPHeaderField: "If-Match")
            request.setValue(nil, forHTTPHeaderField: "If-Unmodified-Since")
        }
        var response = try await base.send(request)
        if dropsEntityTags { response.headers["ETag"] = nil }
        return response
    }
}

/// A transport that answers every write `412` with an empty body while `refuses` is set: a server that refuses
/// every precondition.
struct RefusingTransport: HTTPTransport {
    final class Switch: Sendable {
        let isOn = Locked(false)
    }

    let base: any HTTPTransport
    let refuses: Switch
    /// Whether reads are refused too (`403`) while `refuses` is on.
    var refusesReads = false

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if refuses.isOn.withLock({ $0 }) {
            if request.httpMethod != "GET" { throw .httpStatus(code: 412, body: Data()) }
            if refusesReads { throw .httpStatus(code: 403, body: Data()) }
        }
        return try await base.send(request)
    }
}

/// An outbox storage whose next `store` (one only, when `holds` is set) waits for `holds` to be signalled, after
/// opening `storeStarted`: it blocks the outbox's own queue, never a task.
final class HeldStores: EntryStorage {
    let base: FileEntryStorage
    let holds = Locked<DispatchSemaphore?>(nil)
    let storeStarted = AsyncLatch()

    init(_ base: FileEntryStorage) { self.base = base }

    func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try base.entry(for: key) }
    func store(_ entries: [PersistedEntry]) throws(NetworkError) {
        if let hold = holds.withLock({ hold in
            defer { hold = nil }
            return hold
        }) {
            storeStarted.open()
            hold.wait()
        }
        try base.store(entries)
    }
    func removeEntries(for keys: [String]) throws(NetworkError) { try base.removeEntries(for: keys) }
    func removeAll() throws(NetworkError) { try base.removeAll() }
    func allKeys() throws(NetworkError) -> [String] { try base.allKeys() }
}

/// A transport whose writes to `path`, once `armed`, wait until `release` opens (after opening `entered`).
final class GatedPath: HTTPTransport {
    let base: any HTTPTransport
    let path: String
    let armed = Locked(false)
    let entered = AsyncLatch()
    let release = AsyncLatch()

    init(base: any HTTPTransport, path: String) {
        self.base = base
        self.path = path
    }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if request.httpMethod != "GET", request.url?.path == path, armed.withLock({ $0 }) {
            entered.open()
            try await release.wait()
        }
        return try await base.send(request)
    }
}

/// A transport that answers a refused write's `412` with the body of another item (`43`).
struct WrongItemOn412: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if response.statusCode == 412 { response.body = Data(json(Post(id: "43", title: "Bye")).utf8) }
        return response
    }
}

/// A transport whose answers carry their `ETag` as a weak one.
struct WeakTags: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if let tag = response.headers["ETag"] { response.headers["ETag"] = "W/" + tag }
        return response
    }
}

/// A transport that passes writes on and answers them with an empty `200`: an answer no value decodes from.
struct EmptyWriteAnswers: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var response = try await base.send(request)
        if request.httpMethod != "GET", response.statusCode == 200 { response.body = Data() }
        return response
    }
}

/// `RemotePost` updated by a dictionary of fields: it makes no update request of a value.
struct RemoteTitlePost: Readable, Updatable, PersistedResource {
    typealias Value = Post
    typealias ReadRequest = String
    typealias UpdateRequest = [String: String]
    static let persistenceName = "title-posts"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for fields: [String: String]) -> Endpoint {
        Endpoint(.patch, "posts", body: .json(fields)).appending(id: "42")
    }
}

/// `RemotePost` whose version is its content, as PocketBase's `updated` field would be.
struct RemoteStampedPost: Readable, Updatable, Deletable, PersistedResource {
    typealias Value = Post
    typealias ReadRequest = String
    typealias DeleteRequest = Post
    static let persistenceName = "stamped-posts"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemotePost.updateEndpoint(for: post) }
    static func deleteEndpoint(for post: Post) -> Endpoint { RemotePost.deleteEndpoint(for: post) }
    static func version(of post: Post) -> ItemVersion? { ItemVersion(post.title + "|" + post.body) }
}

/// The feed of `RemoteFeed`, with each post's content as its version, read one by one as `RemoteStampedPost`.
struct RemoteStampedFeed: RemoteFeedWithVersions {
    static func version(of post: Post) -> ItemVersion? { RemoteStampedPost.version(of: post) }
}

/// A merge of posts field by field: each field as the side that changed it has it (mine when both did).
let mergeFields: @Sendable (Post?, Post, Post) throws -> Post = { base, mine, theirs in
    Post(
        id: mine.id, title: mine.title != base?.title ? mine.title : theirs.title,
        body: mine.body != base?.body ? mine.body : theirs.body)
}

/// Collects a conflicts stream's reports, made before the replay that finds them.
final class ConflictCollector: Sendable {
    final class Reports: Sendable {
        let list = Locked<[OutboxConflict]>([])
    }

    let reports = Reports()
    let arrived = AsyncLatch()
    let task: Task<Void, Never>

    init(_ outbox: Outbox?, expecting count: Int = 1) {
        let stream = outbox?.conflicts()
        let (reports, arrived) = (reports, arrived)
        task = Task {
            guard let stream else { return }
            for await conflict in stream {
                if reports.list.withLock({
                    $0.append(conflict); return $0.count
                }) == count {
                    arrived.open()
                }
            }
        }
    }

    var all: [OutboxConflict] { reports.list.withLock { $0 } }
    deinit { task.cancel() }
}
