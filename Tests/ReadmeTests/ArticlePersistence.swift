// Code blocks of ResourceKitPersistence.docc/ResourceKitPersistence.md that no Snippet file holds, verbatim; ReadmeTests checks them.
import Foundation
import ResourceKit
import ResourceKitPersistence

func sendKeptChanges(in store: ResourceStore, whenever networkUsable: AsyncStream<Void>) -> Task<Void, Never>? {
    guard let outbox = store.outbox else { return nil }  // a store without an outbox storage
    return Task { await outbox.replay(whenever: networkUsable) }  // cancel it to stop
}
