import Foundation
import ResourceKit

/// Sending the kept changes: one replay at a time, in order, and what each answer does.
extension Outbox {
    /// Runs replay `run`: its callers are answered when it ends.
    func runReplay(_ run: UInt64) async {
        var attempted: Set<String> = []
        while true {
            // The run ends in the section that finds nothing more to send: a change kept after it starts a new run.
            let next = state.withLock { state -> (OutboxRecord, any OutboxLane, ResourceStore)?? in
                guard !Task.isCancelled, let store = state.store,
                    let record = state.records.first(where: {
                        !attempted.contains($0.id) && state.lanes[$0.type] != nil
                    }),
                    let lane = state.lanes[record.type]
                else { return .none }
                state.sending = record.id
                return .some((record, lane, store))
            }
            guard let (record, lane, store) = next ?? nil else { return endReplay(run) }
            attempted.insert(record.id)
            let result: Result<any Sendable, NetworkError>
            do throws(NetworkError) {
                result = .success(try await lane.send(record, in: store.session))
            } catch {
                result = .failure(error)
            }
            // Still "being sent" until its answer is shown or it is refused: a cancel in between would roll back a
            // change the server took.
            switch result {
            case .success(let answer):
                await land(record, answer: answer, lane: lane, store: store)
            case .failure(let error) where Self.triesLater(error):
                state.withLock { $0.sending = nil }
                return endReplay(run)
            case .failure(let error) where error.code == .decoding:
                // The server took it (a 2xx) but its answer does not decode: landed, and read again.
                await land(record, answer: nil, lane: lane, store: store)
            case .failure(let error):
                await refuse(record, error: error, lane: lane)
            }
            state.withLock { $0.sending = nil }
        }
    }

    /// Ends replay `run` and answers its callers; a run its callers all left was ended by the last of them.
    private func endReplay(_ run: UInt64) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard let current = state.replay, current.id == run else { return [] }
            state.replay = nil
            return Array(current.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
        Changes.raise()
    }

    /// Whether an error on replay means "not now": the server unreachable, busy or failing (`408`, `429`, any
    /// `5xx`), the replay cancelled, or the credentials refused (`401`, or a refresh that failed: the user signs
    /// in again, and the changes are still theirs).
    static func triesLater(_ error: NetworkError) -> Bool {
        if error.isUnreachable || error.code == .cancelled || error.code == .authenticationFailed { return true }
        guard let status = error.statusCode else { return false }
        return status == 401 || status == 408 || status == 429 || (500...599).contains(status)
    }

    /// A change the server took: off the disk, then shown as answered (`answer` `nil`: an answer that did not
    /// decode, so the item is marked stale and read again where it is observed).
    private func land(_ record: OutboxRecord, answer: (any Sendable)?, lane: any OutboxLane, store: ResourceStore)
        async
    {
        do throws(NetworkError) {
            try await perform { storage throws(NetworkError) in try storage.removeEntries(for: [record.key]) }
            state.withLock { $0.lastError = nil }
        } catch {
            // Landed, but still on disk: a later launch sends it again, with the same `Idempotency-Key`.
            state.withLock { $0.lastError = error }
        }
        state.withLock { state in state.records.removeAll { $0.id == record.id } }
        guard let answer else {
            unshow(record.id)
            notify()
            await lane.refresh(record, in: store)
            return
        }
        // The server's answer first, then the layer goes: no holder shows the value from before in between. The
        // change is marked ended before the answer leaves, so that a list drops its layer in the same change of
        // state as it takes the answer (a create's placeholder and its answer are never both shown).
        let placeholder = state.withLock { $0.shown[record.id]?.token }
        placeholder?.end()
        lane.land(record, answer: answer, placeholder: placeholder, in: store)
        unshow(record.id)
        notify()
    }

    private func refuse(_ record: OutboxRecord, error: NetworkError, lane: any OutboxLane) async {
        let item = lane.itemKey(of: record)
        let dropped = state.withLock { state -> [OutboxRecord] in
            // Later changes of the item, through any type (its resources' or its lists'), each read by its lane.
            let dropped = state.records.filter { other in
                guard other.id != record.id else { return true }
                // A create names no item: nothing depends on it.
                guard let item, other.sequence > record.sequence else { return false }
                return state.lanes[other.type]?.itemKey(of: other) == item
            }
            let ids = Set(dropped.map(\.id))
            state.records.removeAll { ids.contains($0.id) }
            return dropped
        }
        do throws(NetworkError) {
            try await perform { storage throws(NetworkError) in try storage.removeEntries(for: dropped.map(\.key)) }
        } catch {
            state.withLock { $0.lastError = error }
        }
        for change in dropped { unshow(change.id) }
        notify()
        let watchers = state.withLock { Array($0.failureWatchers.values) }
        for change in dropped {
            let failure = OutboxFailure(
                change: change.change, error: error, after: change.id == record.id ? nil : record.id)
            for watcher in watchers { watcher.yield(failure) }
        }
    }
}
