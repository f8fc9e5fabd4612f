import Foundation
import ResourceKit

/// What each kept change is made on: the validators of values the outbox landed, kept for the changes made on
/// them, in memory and on disk.
extension Outbox {
    /// A change's base, with the validators of what the outbox last showed of the item as the server's when
    /// the holder's value is that one: a value the outbox landed reaches its holders without its validators, and
    /// a change made on it would otherwise carry no precondition.
    func known(_ base: MutationBase?, of item: ItemKey, remoteType: ObjectIdentifier) -> MutationBase? {
        guard var base, base.validators == nil, let value = base.value else { return base }
        return state.withLock { state in
            guard let lane = state.lanesByType[remoteType], let id = lane.encode(id: item.id, value: nil)?.item,
                let landed = state.landed[Self.landedKey(type: lane.name, item: id)], landed.value != nil,
                lane.encode(value: value) == landed.value
            else { return base }
            base.validators = Validators(entityTag: landed.entityTag, lastModified: landed.lastModified)
            return base
        }
    }

    static let landedPrefix = "landed-"

    /// The key of an item's landed base: its type's name and its id, JSON-encoded.
    static func landedKey(type: String, item: Data) -> String { type + "/" + item.base64EncodedString() }

    /// Remembers what the outbox showed of a change's item as the server's (`nil`: nothing known, as after a
    /// deletion), in memory and on disk.
    func remember(_ base: OutboxRecord.Base?, of record: OutboxRecord) async {
        guard !record.isCreation else { return }
        let key = Self.landedKey(type: record.type, item: record.item)
        state.withLock { $0.landed[key] = base }
        do throws(NetworkError) {
            let encoded = try base.map { base throws(NetworkError) in
                guard let data = try? JSONEncoder().encode(base) else {
                    throw .invalidRequest("a base does not encode")
                }
                return data
            }
            try await perform { storage throws(NetworkError) in
                if let encoded {
                    try storage.store([PersistedEntry(key: Self.landedPrefix + key, value: encoded, loadedAt: Date())])
                } else {
                    try storage.removeEntries(for: [Self.landedPrefix + key])
                }
            }
        } catch {
            state.withLock { $0.lastError = error }
        }
    }
}
