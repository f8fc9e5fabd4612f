import Foundation
import ResourceKit

/// Refusals that are not conflicts: the server's item is the very value a change was made on (only the
/// validators the change knew were older), or it already holds the change's edit (the change landed, and its
/// answer was lost).
extension Outbox {
    /// What a refused precondition or a version that moved says once the server's item is compared with the
    /// change's base and value.
    enum Refusal {
        /// A real conflict: someone else changed the item.
        case conflict
        /// The server's item is the change's base: the change is sent again, on the server's validators.
        case rebase(OutboxRecord)
        /// The server's item holds every field the change set, as the change set it: the change has landed.
        case landed(LaneAnswer)
    }

    /// Compares the server's side of a refusal with the change.
    ///
    /// Values are compared as the lanes encode them (JSON, keys sorted). A change's edit is the top-level members
    /// in which its value differs from its base; the server holds it when each of those members is as the change
    /// set it (someone else's change to other members is kept, and nothing is written over it).
    static func judge(_ record: OutboxRecord, against server: ServerSide, lane: any OutboxLane) -> Refusal {
        guard server.unreadable == nil, !record.isCreation, let theirs = server.value, let base = record.base?.value
        else { return .conflict }
        if theirs == base, let current = server.base {
            var rebased = record
            var known = current
            // What a later merge starts from: the same value, now with the server's validators.
            known.value = base
            rebased.base = known
            return .rebase(rebased)
        }
        guard !record.isDeletion, let mine = record.value, holds(edit: mine, madeOn: base, in: theirs) else {
            return .conflict
        }
        return .landed(LaneAnswer(answer: lane.answer(of: server), base: server.base))
    }

    /// Whether `theirs` has every top-level member in which `mine` differs from `base` as `mine` has it; `false`
    /// when a value is not a JSON object, or `mine` changes nothing.
    static func holds(edit mine: Data, madeOn base: Data, in theirs: Data) -> Bool {
        guard let mine = members(of: mine), let base = members(of: base), let theirs = members(of: theirs) else {
            return false
        }
        let edited = mine.filter { base[$0.key] != $0.value }
        let removed = base.keys.filter { mine[$0] == nil }
        guard !edited.isEmpty || !removed.isEmpty else { return false }
        return edited.allSatisfy { theirs[$0.key] == $0.value } && removed.allSatisfy { theirs[$0] == nil }
    }

    /// A JSON object's members, each as its own sorted-key encoding.
    private static func members(of data: Data) -> [String: Data]? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        var members: [String: Data] = [:]
        for (key, value) in object {
            // In an array: a top-level fragment is not valid JSON everywhere.
            guard let encoded = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys]) else {
                return nil
            }
            members[key] = encoded
        }
        return members
    }
}
