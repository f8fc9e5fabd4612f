import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server of posts 41, 42 and 43 that decides each answer when the request arrives (so a read that arrives
/// before an update answers the old post) and holds it until the test releases it. An update is stored as
/// `v<version>`, whatever its title, unless its title says "refuse": then it is refused.
final class HeldServer: HTTPTransport {
    private struct State {
        var version = 0
        var held: [(answer: HTTPResponse, continuation: CheckedContinuation<HTTPResponse, Never>)] = []
    }

    private let state = Watched(State())

    static func post(version: Int) -> Post { Post(id: "42", title: "v\(version)") }

    var heldCount: Int { state.read { $0.held.count } }
    var version: Int { state.read { $0.version } }

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        await withCheckedContinuation { continuation in
            state.withLock { state in
                let answer: HTTPResponse
                switch (request.httpMethod, request.url?.path) {
                case ("PATCH", _) where String(decoding: request.httpBody ?? Data(), as: UTF8.self).contains("refuse"):
                    answer = HTTPResponse(statusCode: 422, body: Data("{}".utf8))
                case ("PATCH", _):
                    state.version += 1
                    answer = postResponse(Self.post(version: state.version))
                case (_, "/api/posts/42"):
                    answer = postResponse(Self.post(version: state.version))
                default:
                    answer = feedPage([storePosts[0], Self.post(version: state.version), storePosts[2]])
                }
                state.held.append((answer, continuation))
            }
        }
    }

    /// Answers the held requests in random order, those that arrive meanwhile too, until every task has ended.
    func answerAll(
        until tasks: [Task<Void, Never>], using random: inout SeededGenerator, _ schedule: String
    ) async throws {
        let done = Watched(0)
        for task in tasks {
            Task {
                await task.value
                done.withLock { $0 += 1 }
            }
        }
        // Answers whatever is held, one request at a time, until every call has ended. Each wait is for a move
        // (a request arrives or a call ends); a schedule is stuck when nothing moves for two minutes.
        while true {
            try await waitUntil(
                "a request or the end of every call (\(schedule))",
                seen: { "\(done.value) of \(tasks.count) calls ended, \(self.heldCount) held" }
            ) { heldCount > 0 || done.value == tasks.count }
            if heldCount == 0 { return }
            release(Int.random(in: 0..<1_000, using: &random))
        }
    }

    /// Answers the held request at `position` (in arrival order among those held).
    func release(_ position: Int) {
        let held = state.withLock { $0.held.remove(at: position % $0.held.count) }
        held.continuation.resume(returning: held.answer)
    }
}

/// Seeded random schedules of reads, page loads and updates through the holders of post 42, answered in
/// random order: whatever the order, the holders end agreeing, and a last read reaches all of them.
/// `RESOURCEKIT_SCHEDULES` sets how many schedules run, `RESOURCEKIT_SEED` replays one.
@Suite(.timeLimit(.minutes(10))) struct StoreScheduleTests {
    @Test func holdersAgreeAfterAnySchedule() async {
        await ScheduleSettings.run { seed in try await agreeingHolders(seed: seed) }
    }

    /// Optimistic updates through any of eight holders, some refused by the server, and cancellations at random
    /// points (of a task in flight, or of an update a few yields after it starts, so that its end can race its
    /// start): at the end no optimistic value is left anywhere, and the holders agree.
    @Test func noOptimisticValueOutlivesItsUpdate() async {
        await ScheduleSettings.run { seed in try await noLeftoverLayers(seed: seed) }
    }

    func agreeingHolders(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let server = HeldServer()
        let store = ResourceStore(session: makeTimelessSession(server))
        let detail = store.resource(RemotePost.self, id: "42")
        let preview = store.resource(RemotePostPreview.self, id: "42")
        let feeds = [store.list(RemoteFeed.self, request: "a"), store.list(RemoteFeed.self, request: "b")]
        var tasks: [Task<Void, Never>] = []
        var steps: [String] = []
        for _ in 0..<30 {
            let action = Int.random(in: 0..<8, using: &random)
            steps.append(String(action))
            switch action {
            case 0: tasks.append(Task { _ = try? await detail.read("42") })
            case 1: tasks.append(Task { _ = try? await preview.read("42") })
            case 2, 3:
                let feed = feeds[action - 2]
                tasks.append(Task { _ = try? await feed.loadFirstPage() })
            case 4: tasks.append(Task { _ = try? await detail.update(Post(id: "42", title: "edit")) })
            case 5: tasks.append(Task { _ = try? await feeds[0].update(Post(id: "42", title: "edit")) })
            default:
                if server.heldCount > 0 { server.release(Int.random(in: 0..<1_000, using: &random)) }
            }
        }
        let context = "steps \(steps)"
        do {
            try await server.answerAll(until: tasks, using: &random, context)
        } catch {
            throw StuckSchedule(description: "\(error); the store: \(store.snapshot())")
        }
        let holders = [detail.state.value, preview.state.value] + feeds.map { $0.items.first { $0.id == "42" } }
        try check(Set(holders.compactMap { $0?.title }).count <= 1, "the holders disagree: \(holders), \(context)")
        try check(!detail.state.isLoading && !preview.state.isLoading, "a resource is loading, \(context)")
        try check(feeds.allSatisfy { !$0.listState.content.isLoading }, "a list is loading, \(context)")

        // One more read reaches every holder, without a request of theirs.
        let last = Task { try await detail.read("42") }
        try await waitUntil("the last read is sent") { server.heldCount == 1 }
        server.release(0)
        let final = HeldServer.post(version: server.version)
        try check(try await last.value == final, "the last read, \(context)")
        try check(detail.state == .available(final), "detail \(detail.state), \(context)")
        try check(preview.state.value == nil || preview.state == .available(final), "preview, \(context)")
        for feed in feeds where feed.pagination.pagesLoaded > 0 {
            try check(feed.items == [storePosts[0], final, storePosts[2]], "feed \(feed.items), \(context)")
        }
    }

    func noLeftoverLayers(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let server = HeldServer()
        let store = ResourceStore(session: makeTimelessSession(server))
        let detail = store.resource(RemotePost.self, id: "42")
        let preview = store.resource(RemotePostPreview.self, id: "42")
        let feeds = (0..<6).map { store.list(RemoteFeed.self, request: "feed \($0)") }
        for feed in feeds {
            let load = Task { try await feed.loadFirstPage() }
            try await waitUntil("the first page is asked") { server.heldCount == 1 }
            server.release(0)
            _ = try await load.value
        }
        var tasks: [Task<Void, Never>] = []
        var steps: [String] = []
        for _ in 0..<30 {
            let action = Int.random(in: 0..<10, using: &random)
            let title = Bool.random(using: &random) ? "edit" : "refuse"
            let feed = feeds[Int.random(in: 0..<feeds.count, using: &random)]
            steps.append("\(action)\(title.prefix(1))")
            let post = Post(id: "42", title: title)
            switch action {
            case 0: tasks.append(Task { _ = try? await detail.update(post, optimistic: post) })
            case 1: tasks.append(Task { _ = try? await feed.update(post, optimistic: post) })
            case 2: tasks.append(Task { _ = try? await detail.read("42") })
            case 3: tasks.append(Task { _ = try? await feed.loadFirstPage() })
            case 4: tasks.append(Task { _ = try? await preview.read("42") })
            case 5: if !tasks.isEmpty { tasks[Int.random(in: 0..<tasks.count, using: &random)].cancel() }
            case 6:
                // Cancelled a few yields after it starts: its end races its start through the store.
                let throughDetail = Bool.random(using: &random)
                let update = Task {
                    _ =
                        try? await
                        (throughDetail ? detail.update(post, optimistic: post) : feed.update(post, optimistic: post))
                }
                tasks.append(update)
                for _ in 0..<Int.random(in: 0...11, using: &random) { await Task.yield() }
                update.cancel()
            default:
                if server.heldCount > 0 { server.release(Int.random(in: 0..<1_000, using: &random)) }
            }
        }
        let context = "steps \(steps)"
        do {
            try await server.answerAll(until: tasks, using: &random, context)
        } catch {
            throw StuckSchedule(description: "\(error); the store: \(store.snapshot())")
        }
        let shown = [detail.state.value, preview.state.value] + feeds.map { $0.items.first { $0.id == "42" } }
        let titles = shown.map { $0?.title ?? "nothing" }
        try check(titles.allSatisfy { $0.hasPrefix("v") }, "an optimistic value was left: \(titles), \(context)")
        try check(Set(titles).count == 1, "the holders disagree: \(titles), \(context)")
        try check(!detail.state.isLoading && !preview.state.isLoading, "a resource is loading, \(context)")
        try check(feeds.allSatisfy { !$0.listState.content.isLoading }, "a list is loading, \(context)")
        try check(feeds.allSatisfy { $0.items.map(\.id) == storePosts.map(\.id) }, "a list lost an item, \(context)")
    }

    func check(_ condition: Bool, _ description: @autoclosure () -> String) throws {
        if !condition { throw Mismatch(description: description()) }
    }
}
