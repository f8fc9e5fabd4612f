import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

@testable import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The backend, with every write held at a gate while it is closed: a replay's send in flight, for as long as a
/// test needs. The gate ignores cancellation, as a request already on the wire may still land.
final class GatedWrites: HTTPTransport {
    private struct State {
        var isOpen = true
        /// Writes that reached the gate closed.
        var arrived = 0
        var held: [CheckedContinuation<Void, Never>] = []
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    let backend: InMemoryBackend
    private let state = Locked(State())

    init(_ backend: InMemoryBackend) { self.backend = backend }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if request.httpMethod != "GET" {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (passes, arrivals) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if state.isOpen { return (true, []) }
                    state.arrived += 1
                    state.held.append(continuation)
                    let arrivals = state.arrivalWaiters.filter { $0.count <= state.arrived }.map(\.continuation)
                    state.arrivalWaiters.removeAll { $0.count <= state.arrived }
                    return (false, arrivals)
                }
                for arrival in arrivals { arrival.resume() }
                if passes { continuation.resume() }
            }
        }
        return try await backend.send(request)
    }

    /// Waits until `count` writes reached the gate closed.
    func waitForHeld(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state in
                if state.arrived >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if reached { continuation.resume() }
        }
    }

    func close() { state.withLock { $0.isOpen = false } }

    func open() {
        let held = state.withLock { state in
            state.isOpen = true
            defer { state.held = [] }
            return state.held
        }
        for write in held { write.resume() }
    }
}

/// Who waits for a replay, and what cancelling one of them does.
extension OutboxTests {
    /// Keeps two edits, of 42 and 43, with the server unreachable; returns the store's outbox and the edits.
    func keepTwoEdits(through gate: GatedWrites) async throws -> (ResourceStore, Outbox, [Post]) {
        let store = try launch(transport: gate)
        let outbox = try #require(store.outbox)
        let posts = [store.resource(RemotePost.self, id: "42"), store.resource(RemotePost.self, id: "43")]
        for (post, id) in zip(posts, ["42", "43"]) { try await post.read(id) }
        var edits: [Post] = []
        for (post, id) in zip(posts, ["42", "43"]) {
            edits.append(try await keepOffline(post, Post(id: id, title: "Edited \(id)"), in: store).post)
        }
        #expect(outbox.pending.count == 2)
        backend.isReachable = true
        gate.close()
        return (store, outbox, edits)
    }

    @Test func aCancelledCallerStopsWaitingAndTheReplayGoesOnForTheOthers() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = GatedWrites(backend)
        let (store, outbox, edits) = try await keepTwoEdits(through: gate)
        let finished = Locked<[String]>([])
        let leaving = Task {
            await outbox.replay()
            finished.withLock { $0.append("leaving") }
        }
        await gate.waitForHeld(1)
        let staying = Task {
            await outbox.replay()
            finished.withLock { $0.append("staying") }
        }
        try await waitUntil("the second caller waits") { outbox.replayCallerCount == 2 }
        leaving.cancel()
        await leaving.value
        // The first change is still at the gate: only the cancelled caller has returned.
        #expect(finished.withLock { $0 } == ["leaving"])
        gate.open()
        await staying.value
        #expect(finished.withLock { $0 } == ["leaving", "staying"])
        #expect(outbox.pending.isEmpty)
        #expect(try serverPost("42") == edits[0])
        #expect(try serverPost("43") == edits[1])
        #expect(writes.map(\.path) == ["/api/posts/42", "/api/posts/43"])
        _ = store
    }

    @Test func whenTheLastCallerIsCancelledTheReplayStopsAndALaterOneAppliesEachChangeOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = GatedWrites(backend)
        let (store, outbox, edits) = try await keepTwoEdits(through: gate)
        let only = Task { await outbox.replay() }
        await gate.waitForHeld(1)
        only.cancel()
        await only.value
        #expect(outbox.replayCallerCount == 0)
        // The cancelled send's fate is unknown: a new replay, started once the stopped one has ended, sends it
        // again under the same Idempotency-Key, so that the server applies it once.
        let next = Task { await outbox.replay() }
        try await waitUntil("the new caller waits") { outbox.replayCallerCount == 1 }
        gate.open()
        await next.value
        #expect(outbox.pending.isEmpty)
        #expect(try serverPost("42") == edits[0])
        #expect(try serverPost("43") == edits[1])
        #expect(writes.map(\.path) == ["/api/posts/42", "/api/posts/42", "/api/posts/43"])
        let keys = writes.filter { $0.path == "/api/posts/42" }.map { $0.headers["Idempotency-Key"] }
        #expect(keys.count == 2 && keys[0] != nil && keys[0] == keys[1])
        _ = store
    }

    @Test func aCallerCancelledBeforeItCallsReturnsAndStartsNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = GatedWrites(backend)
        let (store, outbox, _) = try await keepTwoEdits(through: gate)
        let cancelled = Task {
            // Cancelled before it calls.
            withUnsafeCurrentTask { $0?.cancel() }
            await outbox.replay()
        }
        await cancelled.value
        #expect(outbox.replayCallerCount == 0)
        #expect(writes.isEmpty)
        #expect(outbox.pending.count == 2)
        _ = store
    }
}

/// What a kept change stores on disk, and what it does not.
extension OutboxTests {
    @Test func aKeptChangeStoresNoCredentialOfTheSessionsAdapters() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let outboxStorage = try FileEntryStorage(
            directory: directory.appendingPathComponent("outbox"), maximumBytes: .max)
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: outboxStorage, queueWhenOffline: [.resources(RemotePost.self)], writeDelay: .milliseconds(100))
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: backend,
            adapters: [BearerTokenAdapter(token: "session-secret-token")], timeLimit: nil)
        let store = ResourceStore(session: session, persistence: persistence)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Edited"), in: store)
        let keys = try outboxStorage.allKeys()
        #expect(keys.count == 1)
        let stored = try #require(try outboxStorage.entry(for: keys[0])).value
        #expect(!String(decoding: stored, as: UTF8.self).contains("session-secret-token"))
        let record = try #require(try JSONSerialization.jsonObject(with: stored) as? [String: Any])
        let headers = try #require(record["headers"] as? [[String: String]])
        // The endpoint's own headers, and the key; what adapters add is added again when it is sent.
        #expect(headers.map { $0["name"] } == ["Idempotency-Key"])
        backend.isReachable = true
        await store.outbox?.replay()
        let write = try #require(writes.last)
        #expect(write.headers["Authorization"] == "Bearer session-secret-token")
        #expect(write.headers["Idempotency-Key"] == id)
        #expect(try serverPost("42")?.title == "Edited")
    }
}
