import Foundation
public import ResourceKit

/// Kept changes whose item the server moved past meanwhile: found on replay, resolved by the type's policy or
/// held for the app.
extension Outbox {
    /// The changes held in a conflict, in order: each stays shown in every holder over the server's value, and
    /// later changes of its item wait behind it, until ``resolve(_:with:)`` (or ``cancel(_:)``). Held changes are
    /// kept on disk with the server's value: they are still held after a restart.
    public var held: [OutboxConflict] {
        state.withLock { state in state.records.compactMap { state.conflict(of: $0, resolution: nil) } }
    }

    /// A stream of the conflicts found on replay, as they are found, whatever became of them: held (
    /// ``OutboxConflict/resolution`` `nil`), or resolved by the type's ``ConflictPolicy``. It gets the conflicts
    /// from its making on (make it before you replay; ``held`` lists the ones found earlier), keeps each until
    /// read, and ends when the reading task is cancelled.
    public func conflicts() -> AsyncStream<OutboxConflict> { reports(\.conflictWatchers) }

    /// Ends a held conflict: ``ConflictResolution/keepServer`` rolls the change back in every holder, which
    /// shows the server's value; ``ConflictResolution/keepMine`` and ``ConflictResolution/use(_:)`` make it
    /// on the server's current version (with a new `Idempotency-Key`), show what it sends, and replay (as
    /// ``replay()`` does, joining a replay that runs); this call returns when that replay ends, the change sent,
    /// or still pending if the server could not be reached. If the server moved past it again meanwhile, that
    /// replay finds a new conflict and the type's policy applies to it. A resolution is not reported on
    /// ``conflicts()``.
    /// - Parameters:
    ///   - id: The held change's ``PendingChange/id``.
    ///   - resolution: What to do with it.
    /// - Returns: Whether a held change with that id was found (`false` too while another call resolves it, and
    ///   for a change of a type this run's store was not given, which ``held`` still lists).
    /// - Throws: `NetworkError.invalidRequest(_:)` for a value of another type or item, or of a type that makes
    ///   no update request of a value, and for `keepMine` or `use` on an update of an item the server deleted;
    ///   `NetworkError.file(_:)` when the storage could not record the resolution. The change is then still
    ///   held.
    @discardableResult
    public func resolve(_ id: String, with resolution: ConflictResolution) async throws(NetworkError) -> Bool {
        guard
            let (record, lane, store) = state.withLock({ state -> (OutboxRecord, any OutboxLane, ResourceStore)? in
                guard state.sending != id, !state.resolving.contains(id),
                    let record = state.records.first(where: { $0.id == id }), record.conflict != nil,
                    let lane = state.lanes[record.type], let store = state.store
                else { return nil }
                state.resolving.insert(id)
                return (record, lane, store)
            })
        else { return false }
        defer { state.withLock { _ = $0.resolving.remove(id) } }
        let server = ServerSide(value: record.conflict?.theirs, base: record.conflict?.current)
        if resolution.name != ConflictResolution.keepServer.name, server.value == nil, !record.isDeletion,
            record.conflict?.isUnknown != true
        {
            throw .invalidRequest(
                "the server deleted the item: an update cannot keep it; resolve with keepServer, or create it again")
        }
        let step: ConflictStep
        if let value = resolution.value {
            step = .use(value)
        } else {
            step = resolution.name == ConflictResolution.keepServer.name ? .keepServer : .keepMine
        }
        if case .use(let value) = step {
            // Checked before anything changes: a wrong value leaves the change held, and says why.
            _ = try lane.rewrite(record, with: value, in: store.session)
        }
        guard try await apply(step, to: record, against: server, lane: lane, store: store, reports: false) else {
            return true
        }
        await replay()
        return true
    }

    /// Does what the type's policy says with a conflict found on replay, and reports it; returns whether the
    /// change is to be sent again. A change found in conflict `again` (after its policy resolved it in the same
    /// run) is held: the server moved on while it was resolved, or honours no version it is given, and a second
    /// resolution would loop.
    func settle(
        _ record: OutboxRecord, against server: ServerSide, lane: any OutboxLane, store: ResourceStore, again: Bool
    ) async -> Bool {
        var step = lane.settle(record, against: server)
        if again, case .hold = step {
        } else if again {
            step = .hold(
                .invalidRequest(
                    "the server refused the resolved change's precondition too: held rather than sent again"))
        }
        if case .use(let value) = step {
            do throws(NetworkError) {
                _ = try lane.rewrite(record, with: value, in: store.session)
            } catch {
                step = .hold(error)
            }
        }
        do throws(NetworkError) {
            return try await apply(step, to: record, against: server, lane: lane, store: store, reports: true)
        } catch {
            // Not recorded on disk: the change stays as it was, and the next replay finds the conflict again.
            state.withLock { $0.lastError = error }
            return false
        }
    }

    /// Applies a step to a change in conflict with `server`, reports it when it was found now (not when the app
    /// resolves it), and returns whether to send it again.
    private func apply(
        _ step: ConflictStep, to record: OutboxRecord, against server: ServerSide, lane: any OutboxLane,
        store: ResourceStore, reports: Bool
    ) async throws(NetworkError) -> Bool {
        let conflict = OutboxRecord.Conflict(
            theirs: server.value, current: server.base, detectedAt: record.conflict?.detectedAt ?? Date(),
            isUnknown: server.unreadable != nil || record.conflict?.isUnknown == true ? true : nil)
        var resolution: ConflictResolution?
        var resend = false
        switch step {
        case .hold(let error):
            var held = record
            held.conflict = conflict
            try await save(held)
            state.withLock { state in
                state.holdErrors[record.id] = error
                if let position = state.records.firstIndex(where: { $0.id == record.id }) {
                    state.records[position] = held
                }
            }
        case .keepServer:
            try await perform { storage throws(NetworkError) in try storage.removeEntries(for: [record.storageKey]) }
            state.withLock { state in
                state.records.removeAll { $0.id == record.id }
                state.holdErrors[record.id] = nil
            }
            await remember(
                server.base.map { base in
                    var base = base
                    base.value = server.value
                    return base
                }, of: record)
            if conflict.isUnknown == true {
                // The server's value is not known: the layer goes, and the item is read again where it is shown.
                unshow(record.id)
                await lane.refresh(record, in: store)
            } else {
                // The server's value first, then the layer goes.
                lane.land(
                    record, answer: lane.answer(of: server), validators: server.base?.validators, placeholder: nil,
                    in: store)
                unshow(record.id)
            }
            resolution = .keepServer
        case .keepMine, .use:
            var mine = record
            if case .use(let value) = step {
                mine = try lane.rewrite(record, with: value, in: store.session)
                resolution = .use(value)
            } else {
                resolution = .keepMine
            }
            mine.base = server.base.map { base in
                var base = base
                // What a later merge starts from: the server's value this one was made on.
                base.value = server.value
                return base
            }
            mine.conflict = nil
            mine.key = UUID().uuidString
            try await save(mine)
            state.withLock { state in
                state.holdErrors[record.id] = nil
                if let position = state.records.firstIndex(where: { $0.id == record.id }) {
                    state.records[position] = mine
                }
            }
            if mine.value != record.value { reshow(mine, lane: lane) }
            resend = true
        }
        state.withLock { state in
            // No longer being sent: held, dropped, or to be sent again. A change the app resolved is sent again by
            // a replay running now (one that tried it already included).
            if state.sending == record.id { state.sending = nil }
            if resend, !reports { state.resumed.insert(record.id) }
        }
        notify()
        guard reports else { return resend }
        let report = OutboxConflict(
            change: record.change, isDeletedOnServer: server.value == nil && server.unreadable == nil,
            resolution: resolution, error: state.withLock { $0.holdErrors[record.id] }, detectedAt: conflict.detectedAt,
            baseValue: record.base?.value, mineValue: record.isDeletion ? nil : record.value, theirsValue: server.value)
        state.withLock { state in
            state.reported.conflicts += 1
            state.conflictWatchers.yield(report)
        }
        return resend
    }
}

extension Outbox.State {
    /// Whether a kept change waits: it is held, or an earlier change of its item is still kept (held, or of a
    /// type not given in this run), and must reach the server first.
    func waits(_ record: OutboxRecord) -> Bool {
        if record.conflict != nil { return true }
        guard let lane = lanes[record.type], let item = lane.itemKey(of: record) else { return false }
        return records.contains { other in
            other.sequence < record.sequence && lanes[other.type]?.itemKey(of: other) == item
        }
    }

    /// A held change's conflict, as the app reads it.
    func conflict(of record: OutboxRecord, resolution: ConflictResolution?) -> OutboxConflict? {
        guard let conflict = record.conflict else { return nil }
        return OutboxConflict(
            change: record.change, isDeletedOnServer: conflict.theirs == nil && conflict.isUnknown != true,
            resolution: resolution, error: holdErrors[record.id], detectedAt: conflict.detectedAt,
            baseValue: record.base?.value, mineValue: record.isDeletion ? nil : record.value,
            theirsValue: conflict.theirs)
    }
}

/// What a replayed change answered, and the base a later change of its item is made on.
struct LaneAnswer: Sendable {
    /// `Value?`, boxed.
    var answer: any Sendable
    var base: OutboxRecord.Base?
}

/// The server's item in a conflict: its value (`nil`: it has none, or it could not be read) and its validators
/// and version.
struct ServerSide: Sendable {
    var value: Data?
    var base: OutboxRecord.Base?
    /// Why the server's item could not be read, when it could not: its value is then unknown.
    var unreadable: NetworkError? = nil
}

/// What a type's conflict policy makes of one conflict.
enum ConflictStep: Sendable {
    /// Held for the app; the error says why a policy other than `hold` could not resolve it.
    case hold(NetworkError?)
    case keepServer
    case keepMine
    /// Send this value instead (a merge's).
    case use(any Sendable)
}
