// Copied verbatim from the "Snapshots" section of ResourceKit's "Logging and request events" article, which
// ReadmeTests checks; `import ResourceKit` alone brings the feed, the activity and both snapshots.
import Foundation
import ResourceKit

func watchTheLibrary(session: NetworkSession, store: ResourceStore) async throws {
    let feed = Task {
        for await event in session.diagnostics() where event.kind == .requestFinished {
            print(event)  // requestFinished · GET https://api.example.com/v1/posts/42 · attempt 1 · status 200 …
        }
    }
    let post = store.resource(RemoteStoredPost.self, id: "42")
    _ = try await post.read("42")
    let json = try JSONEncoder().encode(store.snapshot())  // what a devtools panel reads
    print(String(decoding: json, as: UTF8.self), session.activity.isBusy)
    feed.cancel()
}
