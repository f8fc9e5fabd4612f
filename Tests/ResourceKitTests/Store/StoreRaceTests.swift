import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Races between an optimistic change's start and its end, across many holders of the item.
@Suite(.timeLimit(.minutes(2))) struct StoreRaceTests {
    /// 100 lists hold post 42; 300 optimistic updates through its resource are each cancelled after a few
    /// yields, so the cancellation (on the test's thread) races the update's start (on the task's). When every
    /// update has ended, no optimistic value is left in any holder, and every holder shows the server's post.
    @Test func cancelledOptimisticUpdatesLeaveNoLayerInAnyList() async throws {
        let (store, _) = try makeStore()
        let lists = (0..<100).map { store.list(RemoteFeed.self, request: "feed \($0)") }
        for list in lists { _ = try await list.loadFirstPage() }
        let post = store.resource(RemotePost.self, id: "42")
        _ = try await post.read("42")
        var random = SeededGenerator(state: 18)
        for round in 0..<300 {
            let shown = Post(id: "42", title: "shown \(round)")
            let update = Task { try await post.update(shown, optimistic: shown) }
            for _ in 0..<Int.random(in: 0...11, using: &random) { await Task.yield() }
            update.cancel()
            _ = try? await update.value
        }
        // A cancelled update may have reached the server; the resource shows what it would without it, and
        // every list agrees with it.
        let shown = lists.map { $0.items.first { $0.id == "42" }?.title ?? "nothing" }
        let expected = post.state.value?.title ?? "nothing"
        #expect(!post.state.isLoading && post.waitingCallerCount == 0)
        #expect(shown.filter { $0 != expected }.isEmpty, "the resource shows \(expected); the lists show \(shown)")
        // A read of the server's post reaches every list: no layer hides it.
        let stored = try await post.read("42")
        #expect(post.state == .available(stored))
        #expect(lists.allSatisfy { $0.items.first { $0.id == "42" } == stored })
        for list in lists { _ = try await list.refresh() }
        #expect(lists.allSatisfy { $0.items.first { $0.id == "42" } == stored })
    }

    /// The end of a change overtakes its start, forced: an Observation callback runs in the update's start
    /// transition, after the lock and before its news goes out, and cancels the update there. The cancel's
    /// end news reaches the list first; the start that follows must not show.
    @Test func anEndThatOvertakesItsStartLeavesNoLayer() async throws {
        let (store, _) = try makeStore()
        let list = store.list(RemoteFeed.self, request: "all")
        _ = try await list.loadFirstPage()
        let post = store.resource(RemotePost.self, id: "42")
        _ = try await post.read("42")
        let recorder = list.recordStates()
        let update = Locked<Task<Post, any Error>?>(nil)
        let started = AsyncLatch()
        withObservationTracking {
            _ = post.state
        } onChange: {
            // Taken out once: the cancel's own transition calls this again, before the tracking ends.
            let task = update.withLock { task in
                defer { task = nil }
                return task
            }
            task?.cancel()
        }
        let shown = Post(id: "42", title: "Shown")
        update.withLock { task in
            task = Task {
                try await started.wait()
                return try await post.update(shown, optimistic: shown)
            }
        }
        let task = try #require(update.withLock { $0 })
        started.open()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(post.state == .available(storePosts[1]))
        #expect(list.items == storePosts)
        // The list never showed the cancelled change: its next state is the next update's answer.
        let edited = Post(id: "42", title: "Edited")
        _ = try await post.update(edited)
        let page = list.pagination
        #expect(
            try await recorder.waitForCount(2) == [
                ListState(content: .available(storePosts), pagination: page),
                ListState(content: .available([storePosts[0], edited, storePosts[2]]), pagination: page),
            ])
        extendLifetime((list, post))
    }
}
