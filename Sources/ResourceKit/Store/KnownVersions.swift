/// What a store knows of the server's version of each item: the validators (`ETag`, `Last-Modified`) of the
/// newest answer about the item that carried any, whatever answers came without them since.
///
/// One record per item, read and written by every holder of it: a list's page, a pushed change and a change
/// that landed through another holder bring values without validators, and none of them erases what is known.
/// A change of the item is made on the record's validators (``MutationBase``), so that once anything in the
/// store knew a validator of the item, no change of it is sent without a precondition. When the value changed
/// since they were given, the precondition names an older version than the one shown: the server refuses it,
/// and the change meets a conflict (held, or sent again when the server's value is the one the change was made
/// on), never an overwrite.
///
/// The records are bounded by what the store holds: past a threshold that doubles with what is kept, the
/// records of items that no live resource or list holds and the store does not remember are dropped.
struct KnownVersions {
    struct Record {
        var validators: Validators
        /// The rank of the answer that gave them: a fact older than this one does not replace them.
        var rank: UInt64
    }

    private(set) var records: [StoreKey: Record] = [:]
    /// The count past which the next record added prunes.
    private var pruneAt = 256

    /// The validators known for `item`.
    subscript(item: StoreKey) -> Validators? { records[item]?.validators }

    /// Learns what a fact at `rank` says of `item`'s version: its validators replace older ones, a removal
    /// forgets them, and a value without validators changes nothing. Returns whether the records outgrew the
    /// threshold and should be pruned.
    mutating func learn(_ item: StoreKey, validators: Validators?, removed: Bool, rank: UInt64) -> Bool {
        if let validators {
            if let known = records[item] {
                // A weak `ETag` alone names no version a precondition can match (RFC 9110 §13.1.1): an older
                // strong one or date still can, and the worst it does is meet a conflict.
                guard known.rank < rank, validators.canPrecondition || !known.validators.canPrecondition else {
                    return false
                }
            }
            records[item] = Record(validators: validators, rank: rank)
            return records.count > pruneAt
        }
        if removed, let known = records[item], known.rank < rank { records[item] = nil }
        return false
    }

    /// Keeps the records of the items `isHeld` accepts, and raises the threshold to twice what is left.
    mutating func prune(keeping isHeld: (StoreKey) -> Bool) {
        records = records.filter { isHeld($0.key) }
        pruneAt = max(256, records.count * 2)
    }

    mutating func removeAll() { records = [:] }
}

extension ItemNews {
    /// Whether the news changes what the store knows of an item's version: a fact with validators, or a
    /// removal.
    @inlinable var teachesVersion: Bool { kind == .fact && (validators != nil || value == nil) }
}

extension Validators {
    /// Whether a write can be made conditional on them: a strong `ETag` (`If-Match`) or a `Last-Modified`
    /// (`If-Unmodified-Since`).
    var canPrecondition: Bool { lastModified != nil || entityTag.map { !$0.hasPrefix("W/") } == true }
}
