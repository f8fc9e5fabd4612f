// Code blocks of ResourceKitPersistence.docc/ResourceKitPersistence.md that no Snippet file holds, verbatim; ReadmeTests checks them.
import Foundation
import ResourceKit
import ResourceKitPersistence

func sendKeptChanges(in store: ResourceStore, whenever networkUsable: AsyncStream<Void>) -> Task<Void, Never>? {
    guard let outbox = store.outbox else { return nil }  // a store without an outbox storage
    return Task { await outbox.replay(whenever: networkUsable) }  // cancel it to stop
}

struct RemoteJournalEntry: Readable, PersistedResource {
    typealias Value = Post
    typealias ReadRequest = String
    static let persistenceName = "journal"  // kept when the type is renamed: its entries still restore
    static let persistenceSchema = 2  // the value's Codable shape changed: entries of schema 1 are dropped
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "journal").appending(id: id) }
}
