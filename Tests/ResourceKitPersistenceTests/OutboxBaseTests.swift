import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import Testing

/// The endpoints and pages of `RemoteFeed`, for a list type that differs from it only in its items' versions.
protocol RemoteFeedWithVersions: Listable, Updatable, Deletable
where
    Value == Post, Item == Post, ListRequest == String, ListResponse == PageEnvelope<Post>, DeleteRequest == Post,
    Pagination == PageNumberPagination
{}

extension RemoteFeedWithVersions {
    static var pagination: PageNumberPagination { PageNumberPagination(pageSize: 50) }
    static func listEndpoint(for feed: String) -> Endpoint { RemoteFeed.listEndpoint(for: feed) }
    static func updateEndpoint(for post: Post) -> Endpoint { RemoteFeed.updateEndpoint(for: post) }
    static func deleteEndpoint(for post: Post) -> Endpoint { RemoteFeed.deleteEndpoint(for: post) }
}

/// The feed of `RemoteFeed`, with each post's title as its version: a list that knows its items' versions.
struct RemoteTitledFeed: RemoteFeedWithVersions {
    static func version(of post: Post) -> ItemVersion? { ItemVersion(post.title) }
}

/// Every kept change remembers what the server had of its item when the change was made (its base), and keeps
/// it across restarts: what a later replay can send as a precondition.
extension OutboxTests {
    @Test func aKeptChangeRemembersTheValidatorsOfTheValueItWasMadeOnAcrossARestart() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await NetworkSession(baseURL: "http://test.local/api", transport: backend)
            .response(for: RemotePost.readEndpoint(for: "42")).headers
        let tag = try #require(served["ETag"])
        let modified = try #require(served["Last-Modified"])
        do {
            let store = try launch()
            let post = store.resource(RemotePost.self, id: "42")
            let gone = store.resource(RemotePost.self, id: "43")
            let unread = store.resource(RemotePost.self, id: "44")
            try await post.read("42")
            try await gone.read("43")
            backend.isReachable = false
            let first = Post(id: "42", title: "First")
            #expect(try await post.update(first, optimistic: first) == first)
            // A second change of the item is made on the same server value: the first has not landed.
            let second = Post(id: "42", title: "Second")
            #expect(try await post.update(second, optimistic: second) == second)
            #expect(try await gone.delete(Post(id: "43", title: "Bye"), optimistic: true) == nil)
            // Nothing known of an item never loaded.
            #expect(
                try await unread.update(Post(id: "44", title: "Blind"), optimistic: Post(id: "44", title: "Blind"))
                    .title == "Blind")
            let bases = store.outbox?.pending.map(\.base)
            #expect(bases?.count == 4)
            for base in bases?.prefix(2) ?? [] {
                #expect(base?.entityTag == tag)
                #expect(base?.lastModified == modified)
                #expect(base?.version == nil)
            }
            #expect(bases?[2]?.entityTag != nil)
            #expect(bases?[2]?.entityTag != tag)
            #expect(bases?[3] == nil)
            await store.persistence?.flush()
        }
        let store = try launch()
        let bases = try #require(store.outbox?.pending.map(\.base))
        #expect(bases.map { $0?.entityTag } == [tag, tag, bases[2]?.entityTag, nil])
        #expect(bases.map { $0?.lastModified }.prefix(2) == [modified, modified])
    }

    @Test func aChangeThroughAListRemembersTheVersionOfTheItemItWasMadeOn() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try launch(queueing: [.list(RemoteTitledFeed.self)])
            let feed = store.list(RemoteTitledFeed.self, request: "all")
            _ = try await feed.loadFirstPage()
            backend.isReachable = false
            let edited = Post(id: "42", title: "Edited")
            #expect(try await feed.update(edited, optimistic: edited) == edited)
            try await feed.delete(Post(id: "43", title: "Bye"), optimistic: true)
            let bases = store.outbox?.pending.map(\.base)
            // The settled items' versions, not the optimistic one: "Hello", not "Edited".
            #expect(bases?.map { $0?.version } == [ItemVersion("Hello"), ItemVersion("Bye")])
            #expect(bases?.map { $0?.entityTag } == [nil, nil])
            await store.persistence?.flush()
        }
        let store = try launch(queueing: [.list(RemoteTitledFeed.self)])
        #expect(store.outbox?.pending.map { $0.base?.version } == [ItemVersion("Hello"), ItemVersion("Bye")])
    }
}
