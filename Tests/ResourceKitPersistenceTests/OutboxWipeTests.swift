import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport in front of another whose writes, once `armed`, get the server's answer and then wait for
/// `release` before returning it, whatever happens to their task meanwhile; `cancelled` opens when such a
/// held write's task is cancelled.
final class AnswerHoldingTransport: HTTPTransport {
    let base: any HTTPTransport
    let armed = Locked(false)
    let release = AsyncLatch()
    let cancelled = AsyncLatch()
    let holding = AsyncLatch()

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let answer: Result<HTTPResponse, NetworkError>
        do throws(NetworkError) {
            answer = .success(try await base.send(request))
        } catch {
            answer = .failure(error)
        }
        guard request.httpMethod != "GET", armed.withLock({ $0 }) else { return try answer.get() }
        holding.open()
        await withTaskCancellationHandler {
            // The server answered already: the answer comes back whatever the caller does meanwhile.
            await withTaskCancellationHandler {
                try? await release.wait()
            } onCancel: {
            }
        } onCancel: {
            cancelled.open()
        }
        return try answer.get()
    }
}

extension OutboxTests {
    /// A logout while a replay's write is on its way: what the replay learns afterwards (here a `412` it holds as
    /// a conflict) is written nowhere, and nothing of the wiped user's changes is left on disk or in memory.
    @Test func aWipeDuringAReplayLeavesNothingOfTheWipedChanges() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = AnswerHoldingTransport(backend)
        let (store, _, _, _) = try await conflictingEdit(transport: gate)
        let outbox = try #require(store.outbox)
        gate.armed.withLock { $0 = true }
        let replay = Task { await outbox.replay() }
        let wipe = Task {
            // Once the replay's write is held: the wipe stops the replay, which then gets its `412`.
            try await gate.cancelled.wait()
            gate.release.open()
        }
        // The wipe starts while the write is held; it cancels the replay's task, which opens `cancelled`.
        try await gate.holding.wait()
        try await store.wipe()
        try await wipe.value
        await replay.value
        #expect(outbox.pending.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(try outbox.storage.allKeys().isEmpty)
        let reopened = try FileEntryStorage(directory: directory.appendingPathComponent("outbox"))
        #expect(try reopened.allKeys().isEmpty)
    }
}
