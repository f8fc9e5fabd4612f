import Foundation
package import ResourceKit
package import ResourceKitTesting

package let storePosts = [
    Post(id: "41", title: "Forty-one"), Post(id: "42", title: "Hello"), Post(id: "43", title: "Bye"),
]

/// A backend with three posts, a session on it without deadlines, and a store.
package func makeStore(
    capacity: Int = 1_000, clock: ManualClock = ManualClock()
) throws -> (ResourceStore, InMemoryBackend) {
    let backend = InMemoryBackend(basePath: "/api")
    backend.addCollection("posts")
    try backend.seed(storePosts, into: "posts")
    let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil, clock: clock)
    return (ResourceStore(session: session, capacity: capacity), backend)
}

/// A post as a server's `200` answer.
package func postResponse(_ post: Post) -> HTTPResponse {
    HTTPResponse(statusCode: 200, body: try! JSONEncoder().encode(post))
}

/// Waits until the store holds `count` live resources and lists. An object can outlive the call that used it by
/// a moment: the task that ran its operation lets it go just after it answers the caller. Each object that goes
/// away tells the store's membership watchers, so this wakes on each change, never on a timer.
package func waitForLiveCount(_ count: Int, in store: ResourceStore) async {
    var changes = store.membershipChanges().makeAsyncIterator()
    while store.liveCount != count, await changes.next() != nil {}
}
