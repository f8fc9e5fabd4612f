import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Posts whose entries and kept changes go under a name of their own: the way a type keeps its name across a
/// rename.
struct RemoteNamedPost: Readable, Updatable, PersistedResource {
    typealias Value = Post
    typealias ReadRequest = String
    static let persistenceName = "notes"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemotePost.updateEndpoint(for: post) }
}

/// The same posts as a type that declares the name the way `Readable` once asked, without adopting
/// ``PersistedResource``: the store no longer reads it.
struct RemoteUnadoptedPost: Readable, Updatable {
    typealias Value = Post
    typealias ReadRequest = String
    static let persistenceName = "notes"
    static func readEndpoint(for id: String) -> Endpoint { RemotePost.readEndpoint(for: id) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemotePost.updateEndpoint(for: post) }
}

/// Persistence settings are `PersistedResource`'s: adopted, they name, version and bound what is kept; declared
/// without it, they are not read, and kept changes left under the old name are said aloud, never lost.
extension OutboxTests {
    func launch(_ queueing: [OfflineQueueing], logger: EventCollector) throws -> ResourceStore {
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: queueing, writeDelay: .zero)
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: backend, timeLimit: nil, logger: logger)
        return ResourceStore(session: session, persistence: persistence)
    }

    @Test func anAdoptingTypeKeepsItsEntriesAndChangesUnderItsOwnName() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch([.resources(RemoteNamedPost.self)], logger: EventCollector())
        let post = store.resource(RemoteNamedPost.self, id: "42")
        try await post.read("42")
        backend.isReachable = false
        _ = try await post.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
        await store.persistence?.flush()
        #expect(try store.persistence?.storage.allKeys() == ["notes/42"])
        #expect(store.outbox?.pending.map(\.typeName) == ["notes"])
    }

    @Test func aTypeThatDeclaresTheNameWithoutAdoptingIsKeptUnderItsModuleQualifiedName() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try launch([], logger: EventCollector())
        let post = store.resource(RemoteUnadoptedPost.self, id: "42")
        try await post.read("42")
        await store.persistence?.flush()
        #expect(try store.persistence?.storage.allKeys() == ["\(String(reflecting: RemoteUnadoptedPost.self))/42"])
    }

    @Test func keptChangesNoGivenTypeClaimsAreLoggedAtLaunchAndStayPending() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let id: String
        do {
            // An earlier release: the type named its changes "notes".
            let store = try launch([.resources(RemoteNamedPost.self)], logger: EventCollector())
            let post = store.resource(RemoteNamedPost.self, id: "42")
            try await post.read("42")
            backend.isReachable = false
            _ = try await post.update(Post(id: "42", title: "Mine"), optimistic: Post(id: "42", title: "Mine"))
            id = try #require(store.outbox?.pending.first?.id)
            await store.persistence?.flush()
        }
        // After the upgrade, the type forgot to adopt `PersistedResource`: nothing claims "notes".
        let logger = EventCollector()
        let store = try launch([.resources(RemoteUnadoptedPost.self)], logger: logger)
        let reported = logger.events.filter { $0.kind == .unclaimedChanges }
        #expect(reported.map(\.itemType) == ["notes"])
        #expect(reported.map(\.itemCount) == [1])
        #expect(logger.levels == [.error])
        #expect(reported.first?.error?.message.contains("PersistedResource") == true)
        #expect(store.outbox?.pending.map(\.id) == [id])
        // Nothing is sent for it.
        backend.isReachable = true
        backend.clearLog()
        await store.outbox?.replay()
        #expect(writes.isEmpty)
        // Once the type adopts it again, its change is claimed, sent, and nothing is said.
        let fixed = EventCollector()
        let again = try launch([.resources(RemoteNamedPost.self)], logger: fixed)
        #expect(fixed.events.filter { $0.kind == .unclaimedChanges }.isEmpty)
        await again.outbox?.replay()
        #expect(try serverPost("42")?.title == "Mine")
        #expect(again.outbox?.pending.isEmpty == true)
    }

    @Test func aStoreWhoseTypesClaimEveryKeptChangeLogsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch([.resources(RemotePost.self)], logger: EventCollector())
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
            await store.persistence?.flush()
        }
        let logger = EventCollector(minimumLevel: .error)
        _ = try launch([.resources(RemotePost.self)], logger: logger)
        #expect(logger.events.isEmpty)
    }
}

@Suite struct DiagnosticKindTests {
    @Test func aKindAModuleAddsHasItsNameAndLevelAndCodesAsItsName() throws {
        let kind = DiagnosticEvent.Kind("tests.somethingHappened", level: .info)
        #expect(kind.name == "tests.somethingHappened")
        #expect(kind == DiagnosticEvent.Kind("tests.somethingHappened", level: .error))
        #expect(kind != .requestStarted)
        let data = try JSONEncoder().encode([kind])
        #expect(String(decoding: data, as: UTF8.self) == #"["tests.somethingHappened"]"#)
        #expect(try JSONDecoder().decode([DiagnosticEvent.Kind].self, from: data) == [kind])
        #expect(DiagnosticEvent.Kind.unclaimedChanges.name == "unclaimedChanges")
    }

}
