import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// A toy cipher for the tests: XOR with a key byte, and a trailing byte that must match the key to open.
func toyCodec(key: UInt8) -> EntryCodec {
    struct WrongKey: Error {}
    return EntryCodec(
        seal: { Data($0.map { $0 ^ key }) + [key] },
        open: { sealed in
            guard sealed.last == key else { throw WrongKey() }
            return Data(sealed.dropLast().map { $0 ^ key })
        })
}

@Suite(.timeLimit(.minutes(1)), .offThePool) struct SealedEntryStorageTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sealed-\(UUID().uuidString)")
    let backend = InMemoryBackend(basePath: "/api")

    init() throws {
        backend.addCollection("posts")
        try backend.seed([Post(id: "42", title: "Secret title")], into: "posts")
    }

    func launch(key: UInt8) throws -> (ResourceStore, SealedEntryStorage) {
        let entries = SealedEntryStorage(
            try FileEntryStorage(directory: directory.appendingPathComponent("entries")), codec: toyCodec(key: key))
        let outbox = SealedEntryStorage(
            try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max),
            codec: toyCodec(key: key))
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let store = ResourceStore(
            session: session,
            persistence: StorePersistence(
                storage: entries, outbox: outbox, queueWhenOffline: [.resources(RemotePost.self)]))
        return (store, entries)
    }

    /// Every byte the store wrote under `directory`.
    func bytesOnDisk() throws -> Data {
        var all = Data()
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            if let data = try? Data(contentsOf: file) { all += data }
        }
        return all
    }

    @Test func valuesAndKeptChangesAreSealedOnDiskAndOpenAfterARestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (store, _) = try launch(key: 0x5A)
            let post = store.resource(RemotePost.self, id: "42")
            try await post.read("42")
            backend.isReachable = false
            let edited = Post(id: "42", title: "Secret edit")
            // Kept: the call returns the value every holder shows.
            #expect(try await post.update(edited, optimistic: edited) == edited)
            #expect(store.outbox?.pending.count == 1)
            await store.persistence?.flush()
        }
        let disk = try bytesOnDisk()
        #expect(!disk.isEmpty)
        #expect(disk.range(of: Data("Secret".utf8)) == nil)
        let (store, _) = try launch(key: 0x5A)
        #expect(store.outbox?.pending.count == 1)
        // The persisted value, under the kept change.
        #expect(store.resource(RemotePost.self, id: "42").state.value?.title == "Secret edit")
        backend.isReachable = true
        await store.outbox?.replay()
        #expect(try backend.records(Post.self, in: "posts").first?.title == "Secret edit")
    }

    @Test func entriesThatDoNotOpenAreDroppedAndReadAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (store, _) = try launch(key: 0x5A)
            try await store.resource(RemotePost.self, id: "42").read("42")
            await store.persistence?.flush()
        }
        // Another key: nothing opens, nothing crashes, the item is read again.
        let (store, entries) = try launch(key: 0x33)
        let post = store.resource(RemotePost.self, id: "42")
        #expect(post.state == .idle)
        #expect(entries.droppedCount == 1)
        #expect(try entries.base.allKeys().isEmpty)
        try await post.read("42")
        #expect(post.state.value?.title == "Secret title")
    }

    @Test func aValueThatCannotBeSealedFailsTheWriteAndStoresNothing() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        struct Refused: Error {}
        let storage = SealedEntryStorage(
            try FileEntryStorage(directory: directory),
            codec: EntryCodec(seal: { _ in throw Refused() }, open: { $0 }))
        let entry = PersistedEntry(key: "a", value: Data("x".utf8), loadedAt: Date())
        #expect(throws: NetworkError.self) { try storage.store([entry]) }
        #expect(try storage.allKeys().isEmpty)
        #expect(try storage.entry(for: "a") == nil)
    }
}
