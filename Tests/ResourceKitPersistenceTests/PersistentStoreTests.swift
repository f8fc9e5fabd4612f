import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import Synchronization
import TestSupport
import Testing

/// A post that counts its decodings, so that a `304` after a restart is seen to decode nothing.
struct DiskPost: Codable, Sendable, Equatable, Identifiable {
    static let decodings = Atomic<Int>(0)
    var id: String
    var title: String
    var body: String = ""

    init(id: String, title: String, body: String = "") {
        self.id = id
        self.title = title
        self.body = body
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        body = try container.decodeIfPresent(String.self, forKey: .body) ?? ""
        Self.decodings.add(1, ordering: .relaxed)
    }
}

/// Posts fresh for 5 seconds.
struct RemoteDiskPost: Readable, Deletable {
    typealias Value = DiskPost
    typealias ReadRequest = String
    typealias DeleteRequest = DiskPost
    static let maxAge: Duration = .seconds(5)
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
    static func deleteEndpoint(for post: DiskPost) -> Endpoint { Endpoint(.delete, "posts").appending(id: post.id) }
}

/// The same posts after a change of their encoding.
struct RemoteDiskPostV2: Readable, PersistedResource {
    typealias Value = DiskPost
    typealias ReadRequest = String
    static let persistenceSchema = 2
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

/// A post that decodes and does not encode: not `Codable`, so never persisted.
struct ReadOnlyPost: Decodable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
}

struct RemoteReadOnlyPost: Readable {
    typealias Value = ReadOnlyPost
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

/// Asks the store for a resource as generic code does, knowing only that `Remote` is `Readable`: before
/// persistence was decided when the holder is made, this call picked the overload that persists nothing.
func resourceAsGenericCodeAsks<Remote: Readable>(
    _ store: ResourceStore, _ type: Remote.Type, id: Remote.Value.ID
) -> Resource<Remote>
where Remote.Value: Identifiable, Remote.Value.ID: Sendable, Remote.ReadRequest == Remote.Value.ID {
    store.resource(type, id: id)
}

/// Asks the store for a list as generic code does, knowing nothing of its items' `Codable`.
func listAsGenericCodeAsks<Remote: Listable>(_ store: ResourceStore, _ type: Remote.Type, request: Remote.ListRequest)
    -> ListResource<Remote> where Remote.ListRequest: Hashable
{
    store.list(type, request: request)
}

/// A wall clock a test moves.
final class WallClock: Sendable {
    private let seconds = Locked<Double>(1_764_000_000)
    var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
    func advance(by interval: Double) { seconds.withLock { $0 += interval } }
}

/// The suites that use `DiskPost`, one test at a time: `DiskPost.decodings` counts for the whole process.
@Suite(.serialized, .offThePool) struct DiskPostSuites {}

extension DiskPostSuites {
    @Suite(.timeLimit(.minutes(1))) struct PersistentStoreTests {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
        let backend = InMemoryBackend(basePath: "/api")
        let wall = WallClock()
        let clock = ManualClock()

        init() throws {
            backend.addCollection("posts")
            try backend.seed([DiskPost(id: "42", title: "Hello"), DiskPost(id: "43", title: "Bye")], into: "posts")
        }

        /// A store as one run of the app makes it: a new session, persistence in the same directory.
        func launch() throws -> ResourceStore {
            let wall = wall
            let persistence = StorePersistence(
                storage: try FileEntryStorage(directory: directory), now: { wall.now })
            let session = NetworkSession(
                baseURL: "http://test.local/api", transport: backend, timeLimit: nil, clock: clock)
            return ResourceStore(session: session, persistence: persistence)
        }

        var reads: Int { backend.requestLog.filter { $0.method == .get }.count }

        @Test func aResourceAfterARestartStartsFromItsPersistedValueBeforeAnyRequest() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                let post = store.resource(RemoteDiskPost.self, id: "42")
                #expect(!post.isRestored)
                try await post.read("42")
                await store.persistence?.flush()
            }
            wall.advance(by: 2)
            let store = try launch()
            let post = store.resource(RemoteDiskPost.self, id: "42")
            let before = reads
            #expect(post.state == .available(DiskPost(id: "42", title: "Hello")))
            #expect(post.isRestored)
            #expect(post.age == .seconds(2))
            #expect(reads == before)
            // An item never persisted starts idle.
            #expect(store.resource(RemoteDiskPost.self, id: "43").state == .idle)
            // The first answer replaces it: no longer "restored".
            try await post.read("42")
            #expect(!post.isRestored)
        }

        @Test func freshnessSurvivesARestartAndAStaleValueCostsA304() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                try await store.resource(RemoteDiskPost.self, id: "42").read("42")
                await store.persistence?.flush()
            }
            // 4 s later on the wall clock: still fresh for `maxAge` (5 s), answered from disk.
            wall.advance(by: 4)
            var store = try launch()
            var before = reads
            #expect(
                try await store.resource(RemoteDiskPost.self, id: "42").read("42", policy: .skipIfFresh).title
                    == "Hello")
            #expect(reads == before)
            // 2 s more: stale. The read is conditional, with the persisted ETag; a 304 decodes nothing.
            wall.advance(by: 2)
            store = try launch()
            before = reads
            let post = store.resource(RemoteDiskPost.self, id: "42")
            let decodings = DiskPost.decodings.load(ordering: .relaxed)
            #expect(try await post.read("42", policy: .skipIfFresh).title == "Hello")
            #expect(reads == before + 1)
            #expect(backend.requestLog.last?.headers["If-None-Match"] != nil)
            #expect(DiskPost.decodings.load(ordering: .relaxed) == decodings)
            #expect(post.age == .zero)
        }

        @Test func staleWhileRevalidateShowsTheDiskValueAndRefreshes() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                try await store.resource(RemoteDiskPost.self, id: "42").read("42")
                await store.persistence?.flush()
            }
            try backend.seed([DiskPost(id: "42", title: "Changed since")], into: "posts")
            wall.advance(by: 60)
            let store = try launch()
            let post = store.resource(RemoteDiskPost.self, id: "42")
            let states = post.recordStates()
            defer { states.stop() }
            #expect(try await post.read("42", policy: .staleWhileRevalidate).title == "Hello")
            try await states.expect([
                .available(DiskPost(id: "42", title: "Hello")), .loading(previous: DiskPost(id: "42", title: "Hello")),
                .available(DiskPost(id: "42", title: "Changed since")),
            ])
            await store.persistence?.flush()
            // And the refreshed value is what the next run starts from.
            #expect(try launch().resource(RemoteDiskPost.self, id: "42").value?.title == "Changed since")
        }

        @Test func anEntryOfAnotherSchemaOrThatNoLongerDecodesIsDroppedAndReadAgain() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                try await store.resource(RemoteDiskPost.self, id: "42").read("42")
                await store.persistence?.flush()
            }
            // The same item under a type whose encoding changed: not restored, and its entry is not trusted.
            let store = try launch()
            let changed = store.resource(RemoteDiskPostV2.self, id: "42")
            #expect(changed.state == .idle)
            #expect(try await changed.read("42").title == "Hello")
            // An entry whose bytes no longer decode as the value: dropped, never a crash.
            let storage = try FileEntryStorage(directory: directory)
            let key = "\(String(reflecting: RemoteDiskPost.self))/42"
            try storage.store([PersistedEntry(key: key, value: Data(#"{"id":42}"#.utf8), loadedAt: wall.now)])
            let next = try launch()
            #expect(next.resource(RemoteDiskPost.self, id: "42").state == .idle)
            await next.persistence?.flush()
            #expect(try storage.entry(for: key) == nil)
        }

        @Test func aDeletionRemovesTheEntryAndWipeRemovesEverything() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try launch()
            let first = store.resource(RemoteDiskPost.self, id: "42")
            let second = store.resource(RemoteDiskPost.self, id: "43")
            try await first.read("42")
            try await second.read("43")
            try await first.delete(DiskPost(id: "42", title: "Hello"))
            await store.persistence?.flush()
            let storage = try FileEntryStorage(directory: directory)
            #expect(try storage.allKeys() == ["\(String(reflecting: RemoteDiskPost.self))/43"])
            try await store.wipe()
            #expect(try storage.allKeys() == [])
            #expect(try launch().resource(RemoteDiskPost.self, id: "43").state == .idle)
        }

        @Test func changesGatherAndTheNewestIsWrittenEvenAfterItsResourceIsFreed() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try launch()
            do {
                let post = store.resource(RemoteDiskPost.self, id: "42")
                try await post.read("42")
                store.apply(.updated(DiskPost(id: "42", title: "second")), as: RemoteDiskPost.self)
                store.apply(.updated(DiskPost(id: "42", title: "third")), as: RemoteDiskPost.self)
            }
            await store.persistence?.flush()
            let storage = try FileEntryStorage(directory: directory)
            let entry = try #require(try storage.entry(for: "\(String(reflecting: RemoteDiskPost.self))/42"))
            #expect(try JSONDecoder().decode(DiskPost.self, from: entry.value).title == "third")
            #expect(try launch().resource(RemoteDiskPost.self, id: "42").value?.title == "third")
        }

        @Test func twoDirectoriesKeepTwoUsersApart() async throws {
            let other = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
            defer {
                try? FileManager.default.removeItem(at: directory)
                try? FileManager.default.removeItem(at: other)
            }
            let store = try launch()
            try await store.resource(RemoteDiskPost.self, id: "42").read("42")
            await store.persistence?.flush()
            let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            let otherUser = ResourceStore(
                session: session, persistence: StorePersistence(storage: try FileEntryStorage(directory: other)))
            #expect(otherUser.resource(RemoteDiskPost.self, id: "42").state == .idle)
        }

        @Test func genericCodeThatKnowsNothingOfCodableGetsAPersistedResource() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                let post = resourceAsGenericCodeAsks(store, RemoteDiskPost.self, id: "42")
                try await post.read("42")
                await store.persistence?.flush()
                #expect(try store.persistence?.storage.allKeys() == ["\(String(reflecting: RemoteDiskPost.self))/42"])
            }
            let store = try launch()
            let before = reads
            let post = resourceAsGenericCodeAsks(store, RemoteDiskPost.self, id: "42")
            #expect(post.state == .available(DiskPost(id: "42", title: "Hello")))
            #expect(post.isRestored)
            #expect(reads == before)
        }

        @Test func aValueThatIsNotCodableIsNeverPersisted() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try launch()
                let post = store.resource(RemoteReadOnlyPost.self, id: "42")
                try await post.read("42")
                #expect(post.value == ReadOnlyPost(id: "42", title: "Hello"))
                await store.persistence?.flush()
                #expect(try store.persistence?.storage.allKeys() == [])
            }
            let store = try launch()
            #expect(store.resource(RemoteReadOnlyPost.self, id: "42").state == .idle)
        }

        @Test func aStoreWithoutPersistenceKeepsNothing() async throws {
            let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            let store = ResourceStore(session: session)
            #expect(store.persistence == nil)
            try await store.resource(RemoteDiskPost.self, id: "42").read("42")
            #expect(ResourceStore(session: session).resource(RemoteDiskPost.self, id: "42").state == .idle)
            try await store.wipe()
        }
    }

    /// A storage whose writes fail until it is told otherwise.
    final class FlakyStorage: EntryStorage {
        let inner: FileEntryStorage
        let failing = Locked(true)

        init(directory: URL) throws { inner = try FileEntryStorage(directory: directory) }

        func entry(for key: String) throws(NetworkError) -> PersistedEntry? { try inner.entry(for: key) }
        /// How many batches reached `inner`.
        let batches = Locked(0)
        /// When set, the next write (one only) waits for it, after opening `writeStarted`.
        let holds = Locked<DispatchSemaphore?>(nil)
        let writeStarted = AsyncLatch()

        func store(_ entries: [PersistedEntry]) throws(NetworkError) {
            try store(entries, removing: [])
        }
        func store(_ entries: [PersistedEntry], removing keys: [String]) throws(NetworkError) {
            if let hold = holds.withLock({ hold in
                defer { hold = nil }
                return hold
            }) {
                writeStarted.open()
                hold.wait()
            }
            if failing.withLock({ $0 }) { throw .file("the disk is full") }
            try inner.store(entries, removing: keys)
            batches.withLock { $0 += 1 }
        }
        func removeEntries(for keys: [String]) throws(NetworkError) { try inner.removeEntries(for: keys) }
        func removeAll() throws(NetworkError) { try inner.removeAll() }
        func allKeys() throws(NetworkError) -> [String] { try inner.allKeys() }
    }
}
