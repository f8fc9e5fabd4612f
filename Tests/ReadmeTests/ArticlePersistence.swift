// Code blocks of ResourceKit.docc/Persistence.md that no Snippet file holds, verbatim; ReadmeTests checks them.
import Foundation
import ResourceKit

func sendKeptChanges(in store: ResourceStore, whenever networkUsable: AsyncStream<Void>) -> Task<Void, Never>? {
    guard let outbox = store.outbox else { return nil }  // a store without an outbox storage
    return Task { await outbox.replay(whenever: networkUsable) }  // cancel it to stop
}
