import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A post's title alone: another value type read from the same collection.
struct PostTitle: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
}

struct RemotePostTitle: Readable {
    typealias Value = PostTitle
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
}

extension PocketBaseRealtimeTests {
    /// Past 1,000 topics in all, the collections with the most records followed one by one are followed whole
    /// until the topics fit: PocketBase takes at most 1,000 a client.
    @Test func topicsStayWithinPocketBasesLimitOverall() async throws {
        let store = ResourceStore(session: session)
        let held = (0..<200).map { store.resource(RemotePost.self, id: "p\($0)") }
        var realtime = PocketBaseRealtime(session: session)
        for collection in ["a", "b", "c", "d", "e", "f"] {
            realtime = realtime.following(RemotePost.self, collection: collection)
        }
        let live = Task { [realtime] in try await realtime.run(in: store) }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        let topics = try #require(posts.last?.1)
        #expect(topics.count == 802)
        #expect(topics.filter { $0.hasSuffix("/*") }.count == 2)
        #expect(Set(topics).count == topics.count)
        #expect(held.count == 200)
    }

    /// A collection followed as two types sends its events to both.
    @Test func aCollectionFollowedTwiceReachesBothTypes() async throws {
        let store = ResourceStore(session: session)
        let post = store.resource(RemotePost.self, id: "42")
        let title = store.resource(RemotePostTitle.self, id: "42")
        try await post.read("42")
        try await title.read("42")
        let live = Task {
            try await PocketBaseRealtime(session: session).following(RemotePost.self, collection: "posts")
                .following(RemotePostTitle.self, collection: "posts").run(in: store)
        }
        defer { live.cancel() }
        try await connect("c1")
        try await waitForPosts(1)
        #expect(posts.last?.1 == ["posts/42"])
        try send(
            "event:posts/42\ndata:{\"action\":\"update\",\"record\":{\"id\":\"42\",\"title\":\"Pushed\",\"body\":\"\"}}\n\n"
        )
        try await waitUntil("the push in both") {
            post.state.value?.title == "Pushed" && title.state.value?.title == "Pushed"
        }
    }

    /// Subscription posts that keep failing stop the source after `maximumAttempts` in a row, with the last
    /// post's error.
    @Test func failingPostsStopTheSourceAfterTheAttemptsAllowed() async throws {
        stub.stub(.post, "/api/realtime", status: 503)
        let store = ResourceStore(session: session)
        let feed = store.list(RemoteFeed.self, request: "latest")
        let realtime = PocketBaseRealtime(
            session: session, reconnect: ReconnectPolicy(initialDelay: .seconds(1), jitter: .none, maximumAttempts: 2)
        ).following(RemotePost.self, collection: "posts")
        let live = Task { try await realtime.run(in: store) }
        try await connect("c1")
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: NetworkError.self) { try await live.value }
        #expect(error?.statusCode == 503)
        #expect(posts.count == 2)
        _ = feed
    }
}
