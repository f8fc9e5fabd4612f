import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import Testing

/// The store's extension point as a module beside the core uses it (the outbox does the same): it hands the
/// store values, a change to show over an item and later its withdrawal, and the store makes what its holders
/// hear. Every requirement it does not implement has a default that adds nothing.
@Suite(.timeLimit(.minutes(1))) struct StoreExtensionTests {
    /// Shows changes of posts and says which it shows, as the outbox says which kept changes it shows.
    final class ShowingExtension: StoreExtension {
        private let shown = Mutex<[(id: String, change: ShownChange<Post>)]>([])

        func show(_ post: Post, in store: ResourceStore) -> (change: ShownChange<Post>, mark: ChangeMark) {
            let mark = ChangeMark()
            let change = ShownChange(id: post.id, value: post, isCreation: false, mark: mark)
            shown.withLock { $0.append((post.id, change)) }
            store.show(change)
            return (change, mark)
        }

        func withdraw(_ change: ShownChange<Post>, of id: String, in store: ResourceStore) {
            shown.withLock { $0.removeAll { $0.id == id } }
            store.withdraw(change)
        }

        func shownChanges<Item: Identifiable & Sendable>(of type: Item.Type, id: Item.ID?) -> [ShownChange<Item>]
        where Item.ID: Sendable {
            shown.withLock { shown in
                shown.filter { id == nil || id.map(AnyHashable.init) == AnyHashable($0.id) }.compactMap {
                    $0.change as? ShownChange<Item>
                }
            }
        }
    }

    let backend: InMemoryBackend
    let showing = ShowingExtension()
    let store: ResourceStore
    let original = storePosts[1]
    let edited = Post(id: "42", title: "Shown by the extension")

    init() throws {
        backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(storePosts, into: "posts")
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        store = ResourceStore(session: session, capacity: 1_000, extensions: [showing])
    }

    @Test func aShownChangeReachesEveryHolderAndHoldersMadeLaterUntilItIsWithdrawn() async throws {
        let list = store.list(RemoteFeed.self, request: "all")
        try await list.loadFirstPage()
        let detail = store.resource(RemotePost.self, id: "42")
        #expect(detail.state == .available(original))
        let recorders = (detail.recordStates(), list.recordStates())

        let (change, _) = showing.show(edited, in: store)
        #expect(detail.state == .available(edited))
        #expect(list.items == [storePosts[0], edited, storePosts[2]])
        // Made now: it asks the extension what it shows of the item, and shows it over what the store knows.
        let preview = store.resource(RemotePostPreview.self, id: "42")
        #expect(preview.state == .available(edited))
        // Of another item, nothing.
        #expect(store.resource(RemotePost.self, id: "41").state == .available(storePosts[0]))

        showing.withdraw(change, of: "42", in: store)
        #expect(detail.state == .available(original))
        #expect(preview.state == .available(original))
        #expect(list.items == storePosts)
        #expect(
            try await recorders.0.waitForCount(3) == [.available(original), .available(edited), .available(original)])
        #expect(
            try await recorders.1.waitForCount(3).map(\.items) == [
                storePosts, [storePosts[0], edited, storePosts[2]], storePosts,
            ])
        // The server was asked for nothing but the page: the changes were only shown.
        #expect(backend.requestLog.count == 1)
        extendLifetime((list, detail, preview))
    }

    @Test func aHolderMadeAfterAChangeEndedDoesNotShowItEvenIfTheExtensionStillNamesIt() async throws {
        let detail = store.resource(RemotePost.self, id: "42")
        try await detail.read("42")
        let (change, mark) = showing.show(edited, in: store)
        #expect(detail.state == .available(edited))
        // Ended (its answer is about to be shown) while the extension still lists it.
        mark.end()
        let preview = store.resource(RemotePostPreview.self, id: "42")
        #expect(preview.state == .available(original))
        showing.withdraw(change, of: "42", in: store)
        #expect(detail.state == .available(original))
        extendLifetime((detail, preview))
    }

    @Test func anExtensionThatImplementsNothingChangesNothing() async throws {
        struct Silent: StoreExtension {}
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let store = ResourceStore(session: session, capacity: 1_000, extensions: [Silent()])
        let detail = store.resource(RemotePost.self, id: "42")
        #expect(try await detail.read("42") == original)
        let list = store.list(RemoteFeed.self, request: "all")
        try await list.loadFirstPage()
        #expect(list.items == storePosts)
        try await detail.update(edited)
        #expect(list.items == [storePosts[0], edited, storePosts[2]])
        try await store.wipe()
        // After a wipe, the store makes a new resource, which starts from nothing.
        #expect(store.resource(RemotePost.self, id: "42").state == .idle)
    }
}
