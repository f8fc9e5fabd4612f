// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit
import ResourceKitPersistence

func makeStore(session: NetworkSession, userID: String, under base: URL) throws -> ResourceStore {
    let directory = base.appendingPathComponent("store/\(userID)")  // one directory per user
    let persistence = StorePersistence(
        storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
        outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
        queueWhenOffline: [.resources(RemoteEditablePost.self)])  // kept offline: part of the configuration
    let store = ResourceStore(session: session, persistence: persistence)
    return store
}

func rename(_ post: Post, to title: String, in store: ResourceStore) async throws {
    var edited = post
    edited.title = title
    // Sent, or kept when the server cannot be reached: either way every screen shows `edited`, and a kept
    // change waits in `store.outbox?.pending` until the outbox sends it. Only a real failure throws.
    try await store.resource(RemoteEditablePost.self, id: post.id).update(edited, optimistic: edited)
}
