import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Testing

@testable import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that hands its next write to the server and then loses the answer, as a connection cut after the
/// request went out does: the server took the change, the device saw `networkConnectionLost`.
struct AnswerLosingTransport: HTTPTransport {
    final class Switch: Sendable {
        let losesNextWrite = Locked(false)
    }

    let base: any HTTPTransport
    let lose = Switch()

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        let response = try await base.send(request)
        if request.httpMethod != "GET",
            lose.losesNextWrite.withLock({ loses in
                defer { loses = false }
                return loses
            })
        {
            throw .transport(code: .networkConnectionLost, message: "the connection was lost after the request")
        }
        return response
    }
}

/// A kept change that reached the server while its answer was lost has landed: the next replay must not hold it
/// as a conflict with the device's own write, whatever the detection.
extension OutboxTests {
    /// Under the version check (a server that ignores preconditions, as PocketBase does), post 42 read, "Mine" kept
    /// offline, then replayed once with its answer lost: the server took it, and it is still pending.
    func versionCheckedEditWhoseAnswerWasLost() async throws -> (
        store: ResourceStore, post: Resource<RemoteStampedPost>, id: String, mine: Post
    ) {
        let losing = AnswerLosingTransport(base: StrippingTransport(base: backend, dropsPreconditions: true))
        let store = try launch(
            queueing: [.resources(RemoteStampedPost.self, detection: .versionCheck)], transport: losing)
        let post = store.resource(RemoteStampedPost.self, id: "42")
        try await post.read("42")
        let outbox = try #require(store.outbox)
        let mine = Post(id: "42", title: "Mine")
        backend.isReachable = false
        _ = try await post.update(mine, optimistic: mine)
        let id = try #require(outbox.pending.first?.id)
        backend.isReachable = true
        losing.lose.losesNextWrite.withLock { $0 = true }
        backend.clearLog()
        await outbox.replay()
        // Read, same version, written; the answer lost: still pending, for the next replay.
        #expect(backend.requestLog.map { "\($0.method) \($0.path)" } == ["GET /api/posts/42", "PATCH /api/posts/42"])
        #expect(try serverPost("42") == mine)
        #expect(outbox.pending.map(\.id) == [id])
        return (store, post, id, mine)
    }

    @Test func underTheVersionCheckAChangeWhoseAnswerWasLostLandsOnTheNextReplayNotAsAConflict() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, post, _, mine) = try await versionCheckedEditWhoseAnswerWasLost()
        let outbox = try #require(store.outbox)
        backend.clearLog()
        await outbox.replay()
        // Read again: the version moved, but the server holds every field the change set, as it set them. Landed,
        // not held, and not written a second time.
        #expect(backend.requestLog.map { "\($0.method) \($0.path)" } == ["GET /api/posts/42"])
        #expect(outbox.pending.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(outbox.reportCounts.conflicts == 0)
        #expect(post.value == mine)
        #expect(try serverPost("42") == mine)
    }

    @Test func underTheVersionCheckALostAnswerThenSomeoneElsesEditIsStillAConflict() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _, id, _) = try await versionCheckedEditWhoseAnswerWasLost()
        let outbox = try #require(store.outbox)
        // Someone else writes over the landed change before the device hears of it: the title is theirs now.
        try await otherDevice(Post(id: "42", title: "Theirs"))
        backend.clearLog()
        await outbox.replay()
        #expect(backend.requestLog.map { "\($0.method) \($0.path)" } == ["GET /api/posts/42"])
        #expect(outbox.held.map(\.id) == [id])
        #expect(try serverPost("42")?.title == "Theirs")
    }

    @Test func withPreconditionsAChangeWhoseAnswerWasLostLandsOnTheNextReplay() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // A server that honours preconditions but not `Idempotency-Key`: the second attempt is refused (`412`),
        // and the server's item, which holds the edit, shows that it landed.
        let losing = AnswerLosingTransport(base: KeyStrippingTransport(base: backend))
        let store = try launch(transport: losing)
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let tag = try #require(try await servedTag("42"))
        let outbox = try #require(store.outbox)
        let mine = Post(id: "42", title: "Mine")
        backend.isReachable = false
        _ = try await post.update(mine, optimistic: mine)
        backend.isReachable = true
        losing.lose.losesNextWrite.withLock { $0 = true }
        await outbox.replay()
        #expect(outbox.pending.count == 1)
        #expect(try serverPost("42") == mine)
        backend.clearLog()
        await outbox.replay()
        // Sent again on the same precondition, refused (the item moved: by this very write), and compared.
        #expect(writes.map(\.method) == [.patch])
        #expect(writes.first?.headers["If-Match"] == tag)
        #expect(outbox.pending.isEmpty)
        #expect(outbox.held.isEmpty)
        #expect(outbox.reportCounts.conflicts == 0)
        #expect(post.value == mine)
    }
}

/// A transport that removes `Idempotency-Key`: a server that does not honour it.
struct KeyStrippingTransport: HTTPTransport {
    let base: any HTTPTransport

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        var request = request
        request.setValue(nil, forHTTPHeaderField: "Idempotency-Key")
        return try await base.send(request)
    }
}
