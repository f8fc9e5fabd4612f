import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A change sent once more on the server's validators (a rebase): the replay's bound of two sends holds for it.
extension OutboxTests {
    /// A server that refuses every precondition while its item still equals the change's base (written again
    /// with the same value: new validators, nothing else): the change is sent once, once more on the server's
    /// validators, and then held, not resolved by its policy into a third send.
    @Test func aChangeSentAgainOnTheServersValidatorsAndRefusedIsHeldAfterTwoSends() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let refusing = RefusingTransport.Switch()
        let store = try launch(
            queueing: [.resources(RemotePost.self, conflicts: .keepMine)],
            transport: RefusingTransport(base: backend, refuses: refusing))
        let post = store.resource(RemotePost.self, id: "42")
        try await post.read("42")
        let base = try #require(post.value)
        let (_, id) = try await keepOffline(post, Post(id: "42", title: "Mine"), in: store)
        backend.isReachable = true
        try await otherDevice(base)
        let outbox = try #require(store.outbox)
        let reports = ConflictCollector(outbox)
        refusing.isOn.withLock { $0 = true }
        backend.clearLog()
        await outbox.replay()
        try await reports.arrived.wait()
        // Each refused send's read: two sends, then held.
        #expect(backend.requestLog.map(\.method) == [.get, .get])
        #expect(reports.all.map(\.id) == [id])
        #expect(reports.all.first?.resolution == nil)
        #expect(outbox.held.first?.id == id)
        #expect(outbox.held.first?.error != nil)
        #expect(post.value?.title == "Mine")
    }
}
