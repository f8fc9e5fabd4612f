// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase

func followTheScores(session: NetworkSession) async throws {
    for try await event in session.events(Endpoint(.get, "scores/live")) {
        print(event.type, event.data, event.lastEventID)
    }
}

func pushed(_ post: Post, into store: ResourceStore) {
    store.apply(.updated(post), as: RemotePost.self)
}

struct Article: Codable, Sendable, Identifiable {
    var id: String
    var title: String
    var updated: String  // PocketBase's autodate field: "2026-12-01 16:22:36.971Z"
}

struct RemoteArticle: Readable {
    typealias Value = Article
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "articles").appending(id: id) }
    static func version(of article: Article) -> ItemVersion? { ItemVersion(article.updated) }
}

func goLive(store: ResourceStore, api: NetworkSession) -> Task<Void, any Error> {
    let realtime = PocketBaseRealtime(session: api)  // base URL: PocketBase's /api
        .following(RemotePost.self, collection: "posts")
    return Task { try await realtime.run(in: store) }  // cancel it to stop
}

func keepFresh(post: Resource<RemotePost>, id: String, store: ResourceStore, becameActive: AsyncStream<Void>) {
    Task { await post.poll(id, every: .seconds(30)) }
    Task { await store.revalidateObserved(whenever: becameActive) }
}
