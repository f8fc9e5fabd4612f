import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

@testable import ResourceKitPersistence

/// The write queue of a persistent store: gathering, failures, wipes (the types are in PersistentStoreTests.swift).
extension DiskPostSuites {
    @Suite(.timeLimit(.minutes(1))) struct PersistenceQueueTests {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString)")
        let backend = InMemoryBackend(basePath: "/api")

        init() throws {
            backend.addCollection("posts")
            try backend.seed([DiskPost(id: "42", title: "Hello"), DiskPost(id: "43", title: "Bye")], into: "posts")
        }

        func session(_ transport: any HTTPTransport) -> NetworkSession {
            NetworkSession(baseURL: "http://test.local/api", transport: transport, timeLimit: nil)
        }

        var key42: String { "\(String(reflecting: RemoteDiskPost.self))/42" }

        @Test func aFailedWriteIsReportedKeptAndWrittenByTheNextFlush() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try FlakyStorage(directory: directory)
            let persistence = StorePersistence(storage: storage)
            let store = ResourceStore(session: session(backend), persistence: persistence)
            try await store.resource(RemoteDiskPost.self, id: "42").read("42")
            await persistence.flush()
            #expect(persistence.lastError?.code == .file)
            #expect(try storage.inner.entry(for: key42) == nil)
            // The disk has room again: a flush with nothing new writes what was kept, and returns.
            storage.failing.withLock { $0 = false }
            await persistence.flush()
            #expect(persistence.lastError == nil)
            #expect(try storage.inner.entry(for: key42) != nil)
        }

        @Test func aValueThatChangesAllTheTimeIsWrittenOncePerDelay() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try FlakyStorage(directory: directory)
            storage.failing.withLock { $0 = false }
            let delay = 0.04
            let persistence = StorePersistence(storage: storage, writeDelay: .milliseconds(40))
            let store = ResourceStore(session: session(backend), persistence: persistence)
            let post = store.resource(RemoteDiskPost.self, id: "42")
            try await post.read("42")
            // Changes as fast as they come for a third of a second: the writer must gather them, one batch per
            // delay, rather than write again as soon as the last write ends.
            let start = Date()
            var changes = 0
            // lint-waits: makes changes for a third of a second; nothing waits for a condition.
            while Date().timeIntervalSince(start) < 0.3 {
                changes += 1
                store.apply(.updated(DiskPost(id: "42", title: "edit \(changes)")), as: RemoteDiskPost.self)
                await Task.yield()
            }
            let elapsed = Date().timeIntervalSince(start)
            let batches = storage.batches.withLock { $0 }
            #expect(batches <= Int(elapsed / delay) + 2, "\(batches) batches for \(changes) changes in \(elapsed) s")
            await persistence.flush()
            #expect(try storage.inner.entry(for: key42)?.value.isEmpty == false)
            let kept = try JSONDecoder().decode(
                DiskPost.self, from: try #require(try storage.inner.entry(for: key42)).value)
            #expect(kept.title == "edit \(changes)")
        }

        @Test func aBatchThatFailsWhileAWipeWaitsForItIsNotWrittenLater() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try FlakyStorage(directory: directory)
            let hold = DispatchSemaphore(value: 0)
            storage.holds.withLock { $0 = hold }
            let persistence = StorePersistence(storage: storage, writeDelay: .zero)
            let store = ResourceStore(session: session(backend), persistence: persistence)
            // The writer takes the logged-in user's value and holds it (the disk is slow, then full).
            try await store.resource(RemoteDiskPost.self, id: "42").read("42")
            try await storage.writeStarted.wait()
            let wipe = Task { try await store.wipe() }
            try await waitUntil("the wipe has begun") { persistence.currentGeneration == 1 }
            hold.signal()
            try await wipe.value
            #expect(persistence.lastError?.code == .file)
            // The disk has room again: nothing of the wiped user is left to write.
            storage.failing.withLock { $0 = false }
            await persistence.flush()
            #expect(try storage.inner.entry(for: key42) == nil)
            #expect(try storage.inner.allKeys() == [])
        }

        @Test func theWriterStoresAndRemovesInOneBatch() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try FlakyStorage(directory: directory)
            storage.failing.withLock { $0 = false }
            let persistence = StorePersistence(storage: storage, writeDelay: .seconds(60))
            let store = ResourceStore(session: session(backend), persistence: persistence)
            do { try await store.resource(RemoteDiskPost.self, id: "42").read("42") }
            // The write queued for the resource holds it until the flush.
            await persistence.flush()
            await waitForLiveCount(0, in: store)
            let live = store.resource(RemoteDiskPost.self, id: "43")
            try await live.read("43")
            store.apply(.deleted("42"), as: RemoteDiskPost.self)
            let before = storage.batches.withLock { $0 }
            await persistence.flush()
            #expect(storage.batches.withLock { $0 } == before + 1)
            #expect(try storage.inner.allKeys() == ["\(String(reflecting: RemoteDiskPost.self))/43"])
        }

        @Test func afterAWipeOnlyResourcesMadeSincePersist() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let persistence = StorePersistence(storage: try FileEntryStorage(directory: directory))
            let store = ResourceStore(session: session(backend), persistence: persistence)
            let before = store.resource(RemoteDiskPost.self, id: "42")
            try await before.read("42")
            try await store.wipe()
            // The logged-out user's resource reads again: nothing is written back.
            try await before.read("42")
            await persistence.flush()
            #expect(try persistence.storage.allKeys() == [])
            // A resource made after the wipe persists.
            try await store.resource(RemoteDiskPost.self, id: "43").read("43")
            await persistence.flush()
            #expect(try persistence.storage.allKeys() == ["\(String(reflecting: RemoteDiskPost.self))/43"])
        }

        @Test func aPushedChangeOfAnItemNoLiveResourceHoldsRemovesItsEntry() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let persistence = StorePersistence(storage: try FileEntryStorage(directory: directory))
            let store = ResourceStore(session: session(backend), persistence: persistence)
            do { try await store.resource(RemoteDiskPost.self, id: "42").read("42") }
            // The write queued for the resource holds it until the flush.
            await persistence.flush()
            await waitForLiveCount(0, in: store)
            #expect(try persistence.storage.entry(for: key42) != nil)
            store.apply(.deleted("42"), as: RemoteDiskPost.self)
            await persistence.flush()
            #expect(try persistence.storage.entry(for: key42) == nil)
            // With a live resource, the push is persisted instead.
            let live = store.resource(RemoteDiskPost.self, id: "43")
            try await live.read("43")
            store.apply(.updated(DiskPost(id: "43", title: "Pushed")), as: RemoteDiskPost.self)
            await persistence.flush()
            let entry = try #require(
                try persistence.storage.entry(for: "\(String(reflecting: RemoteDiskPost.self))/43"))
            #expect(try JSONDecoder().decode(DiskPost.self, from: entry.value).title == "Pushed")
        }

        @Test func anAnswerToARequestSentBeforeARestoredResourceWasMadeStillReplacesIt() async throws {
            defer { try? FileManager.default.removeItem(at: directory) }
            let storage = try FileEntryStorage(directory: directory)
            try storage.store([
                PersistedEntry(
                    key: key42, value: try JSONEncoder().encode(DiskPost(id: "42", title: "From disk")),
                    loadedAt: Date())
            ])
            let transport = ControlledTransport()
            let store = ResourceStore(session: session(transport), persistence: StorePersistence(storage: storage))
            struct DiskFeed: Listable {
                typealias Value = DiskPost
                typealias Item = DiskPost
                typealias ListResponse = PageEnvelope<DiskPost>
                static let pagination = PageNumberPagination(pageSize: 50)
                static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
            }
            let feed = store.list(DiskFeed.self)
            let loading = Task { try await feed.refresh() }
            try await transport.waitForRequests(1)
            let post = store.resource(RemoteDiskPost.self, id: "42")
            #expect(post.isRestored)
            let page =
                #"{"page":1,"perPage":50,"totalItems":1,"totalPages":1,"items":[{"id":"42","title":"From the server"}]}"#
            transport.answer(0, .success(HTTPResponse(statusCode: 200, body: Data(page.utf8))))
            _ = try await loading.value
            #expect(post.value?.title == "From the server")
            #expect(!post.isRestored)
        }
    }
}
