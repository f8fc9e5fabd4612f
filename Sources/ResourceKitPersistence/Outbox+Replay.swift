import Foundation
import ResourceKit

/// Sending the kept changes: one replay at a time, in order, and what each answer does.
extension Outbox {
    /// Sends the kept changes, in order, until none is left, the server is unreachable again, or no caller waits
    /// any more; see ``Outbox`` for what each answer does. It never throws: read ``pending``, ``failures()``
    /// and ``lastError`` afterwards. A call while a replay runs waits for it (which also sends the changes kept
    /// meanwhile). A caller whose task is cancelled returns at once; the replay goes on for the others, and
    /// stops (after the change being sent, if any) when the last caller waiting is cancelled. Changes of types
    /// not in the store's `queueWhenOffline` in this run are neither sent nor shown: they wait for a run that gives
    /// them.
    public func replay() async {
        let caller = state.withLock { state -> UInt64 in
            state.nextReplay &+= 1
            return state.nextReplay
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    // Cancelled before it waited: nothing to start or join.
                    guard !Task.isCancelled else { return false }
                    startRun(in: &state)
                    state.replay?.waiters[caller] = continuation
                    return true
                }
                if !waits { continuation.resume() }
                observation.changed()
            }
        } onCancel: {
            let (waiter, orphan) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
                guard let waiter = state.replay?.waiters.removeValue(forKey: caller) else { return (nil, nil) }
                guard state.replay?.waiters.isEmpty == true else { return (waiter, nil) }
                // Nobody waits any more: the run stops, and a later call starts a new one once it has.
                let orphan = state.replay?.task
                state.replay = nil
                return (waiter, orphan)
            }
            orphan?.cancel()
            waiter?.resume()
            observation.changed()
        }
    }

    /// Starts a replay run unless one runs: after the last one, so that two never send at once.
    func startRun(in state: inout State) {
        guard state.replay == nil else { return }
        state.nextReplay &+= 1
        let run = state.nextReplay
        let previous = state.lastReplay
        let task = Task {
            await previous?.value
            await self.runReplay(run)
        }
        state.replay = ReplayRun(id: run, task: task)
        state.lastReplay = task
    }

    /// Replays now, then each time `signal` yields (the network came back, the app became active, a live
    /// source reconnected), until it ends or the task is cancelled: run it in a task of its own.
    /// - Parameter signal: When to replay.
    public func replay<Signal: AsyncSequence & Sendable>(whenever signal: Signal) async {
        await replay()
        do {
            for try await _ in signal {
                if Task.isCancelled { return }
                await replay()
            }
        } catch {
            return
        }
    }

    /// Runs replay `run`: its callers are answered when it ends.
    func runReplay(_ run: UInt64) async {
        var attempted: Set<String> = []
        // Changes a policy resolved in this run: sent once more, then held if the server refuses them again.
        var resolved: Set<String> = []
        // Changes sent again on the server's validators in this run (their base was the server's value): a second
        // refusal is a conflict.
        var rebased: Set<String> = []
        while true {
            // The run ends in the section that finds nothing more to send: a change kept after it starts a new run.
            let next = state.withLock { state -> (OutboxRecord, any OutboxLane, ResourceStore)?? in
                // Changes the app resolved meanwhile are sent again by this run.
                attempted.subtract(state.resumed)
                state.resumed.removeAll()
                guard !Task.isCancelled, let store = state.store,
                    let record = state.records.first(where: {
                        !attempted.contains($0.id) && state.lanes[$0.type] != nil && !state.waits($0)
                    }),
                    let lane = state.lanes[record.type]
                else { return .none }
                state.sending = record.id
                return .some((record, lane, store))
            }
            guard let (record, lane, store) = next ?? nil else { return endReplay(run) }
            attempted.insert(record.id)
            // Still "being sent" until its answer is shown or it is refused: a cancel in between would roll back a
            // change the server took.
            switch await attempt(record, lane: lane, session: store.session) {
            case .landed(let answer):
                await land(record, answer: answer, lane: lane, store: store)
            case .later:
                state.withLock { $0.sending = nil }
                return endReplay(run)
            case .unreadable:
                // The server took it (a 2xx) but its answer does not decode: landed. The item as the server has
                // it now, read once, is what every holder shows, observed or not, with its validators, and the
                // base of the later changes of the item. A type that cannot read its items by id, or a read
                // that fails: every holder shows the change's own value, marked stale (read where observed).
                if !record.isCreation, let server = try? await lane.current(of: record, in: store.session) {
                    await land(
                        record, answer: LaneAnswer(answer: lane.answer(of: server), base: server.base), lane: lane,
                        store: store)
                } else {
                    await land(record, answer: nil, lane: lane, store: store)
                }
            case .refused(let error):
                await refuse(record, error: error, lane: lane)
            case .conflict(let server):
                switch Self.judge(record, against: server, lane: lane) {
                case .rebase(let record) where !rebased.contains(record.id) && !resolved.contains(record.id):
                    // Nobody changed the item since the value it was made on: only the validators it knew were
                    // older (a value that reached its holders without them). Once more, on the server's.
                    if await rebase(record) {
                        rebased.insert(record.id)
                        attempted.remove(record.id)
                    }
                    state.withLock { $0.sending = nil }
                    continue
                case .landed(let answer):
                    // The server already holds the edit (the change landed before, and its answer was lost).
                    await land(record, answer: answer, lane: lane, store: store)
                    state.withLock { $0.sending = nil }
                    continue
                case .conflict, .rebase: break
                }
                // Sent once more already, on the server's validators or as its policy resolved it: a replay sends a
                // change at most twice, so a second refusal holds it.
                let again = resolved.contains(record.id) || rebased.contains(record.id)
                if await settle(record, against: server, lane: lane, store: store, again: again) {
                    // Resolved by sending it again: once more in this run, made on the server's version.
                    resolved.insert(record.id)
                    attempted.remove(record.id)
                }
            }
            state.withLock { $0.sending = nil }
        }
    }

    /// Replaces a kept change with the same change on a new base, on disk and in the list; `false` when the
    /// storage could not keep it (the change stays as it was).
    private func rebase(_ record: OutboxRecord) async -> Bool {
        do throws(NetworkError) {
            try await save(record)
        } catch {
            state.withLock { $0.lastError = error }
            return false
        }
        state.withLock { state in
            if let position = state.records.firstIndex(where: { $0.id == record.id }) {
                state.records[position] = record
            }
        }
        return true
    }

    /// What one attempt at a kept change came to.
    enum Attempt {
        case landed(LaneAnswer)
        /// Taken (a `2xx`), with an answer that does not decode.
        case unreadable
        /// Not now: the server unreachable, busy or refusing the credentials.
        case later
        case refused(NetworkError)
        /// The server's item moved past the change's base.
        case conflict(ServerSide)
    }

    /// Sends a change with its preconditions, after the version check its type asks for.
    private func attempt(_ record: OutboxRecord, lane: any OutboxLane, session: NetworkSession) async -> Attempt {
        if lane.detection == .versionCheck, !record.isCreation {
            let server: ServerSide
            do throws(NetworkError) {
                server = try await lane.current(of: record, in: session)
            } catch  where Self.triesLater(error) {
                return .later
            } catch {
                // The item cannot be read: not checked, not sent; refused like a change the server refuses.
                return .refused(error)
            }
            if server.value == nil, record.isDeletion {
                return .landed(LaneAnswer(answer: lane.answer(of: server), base: nil))
            }
            if server.value == nil { return .conflict(server) }
            if let version = record.base?.version, server.base?.version != version { return .conflict(server) }
        }
        do throws(NetworkError) {
            return .landed(try await lane.send(record, as: record.conditionalEndpoint, in: session))
        } catch  where error.statusCode == 412 {
            if let server = lane.serverSide(of: error, for: record) { return .conflict(server) }
            // No item in the answer: read it, to report the server's value.
            do throws(NetworkError) {
                let server = try await lane.current(of: record, in: session)
                if server.value == nil, record.isDeletion {
                    return .landed(LaneAnswer(answer: lane.answer(of: server), base: nil))
                }
                return .conflict(server)
            } catch  where Self.triesLater(error) {
                return .later
            } catch {
                // A conflict whose other side cannot be read: held, for the app to decide.
                return .conflict(ServerSide(value: nil, base: nil, unreadable: error))
            }
        } catch  where Self.triesLater(error) {
            return .later
        } catch  where error.code == .decoding {
            return .unreadable
        } catch
            where (error.statusCode == 404 || error.statusCode == 410) && !record.isCreation
            && record.base != nil
        {
            // Gone, although the value the update was made on was there: someone deleted the item meanwhile.
            return .conflict(ServerSide(value: nil, base: nil))
        } catch {
            return .refused(error)
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
        observation.changed()
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
    /// decode and an item that could not be read, so the change's value is shown, marked stale, and read again
    /// where it is observed).
    func land(_ record: OutboxRecord, answer landed: LaneAnswer?, lane: any OutboxLane, store: ResourceStore) async {
        let answer = landed?.answer
        do throws(NetworkError) {
            try await perform { storage throws(NetworkError) in try storage.removeEntries(for: [record.storageKey]) }
            state.withLock { $0.lastError = nil }
        } catch {
            // Landed, but still on disk: a later launch sends it again, with the same `Idempotency-Key`.
            state.withLock { $0.lastError = error }
        }
        let later = state.withLock { state -> [OutboxRecord] in
            state.records.removeAll { $0.id == record.id }
            state.holdErrors[record.id] = nil
            // The item's later changes were made on top of this one: what it answered is their base now (none
            // after a deletion: a change of an item this device deleted is answered as the server answers it).
            guard let landed, let item = lane.itemKey(of: record) else { return [] }
            let base = record.isDeletion ? nil : landed.base
            var later: [OutboxRecord] = []
            for position in state.records.indices
            where state.records[position].sequence > record.sequence && state.records[position].conflict == nil
                && state.lanes[state.records[position].type]?.itemKey(of: state.records[position]) == item
            {
                state.records[position].base = base
                later.append(state.records[position])
            }
            return later
        }
        if let landed { await remember(record.isDeletion ? nil : landed.base, of: record) }
        for change in later {
            do throws(NetworkError) {
                try await save(change)
            } catch {
                state.withLock { $0.lastError = error }
            }
        }
        guard let answer else {
            // The server took the change: its value (or a deletion's absence) stays shown as the server's, not the
            // value from before it, until the read that the stale mark starts where the item is observed.
            if record.isDeletion || record.value != nil {
                lane.land(
                    record, answer: lane.answer(of: ServerSide(value: record.value, base: nil)), validators: nil,
                    placeholder: nil, in: store)
            }
            unshow(record.id)
            notify()
            await lane.refresh(record, in: store)
            return
        }
        // The server's answer first, then the layer goes: no holder shows the value from before in between. The
        // change is marked ended before the answer leaves, so that a list drops its layer in the same change of
        // state as it takes the answer (a create's placeholder and its answer are never both shown).
        let placeholder = state.withLock { $0.shown[record.id]?.mark }
        placeholder?.end()
        lane.land(
            record, answer: answer, validators: landed?.base?.validators, placeholder: placeholder, in: store)
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
            try await perform { storage throws(NetworkError) in
                try storage.removeEntries(for: dropped.map(\.storageKey))
            }
        } catch {
            state.withLock { $0.lastError = error }
        }
        for change in dropped { unshow(change.id) }
        notify()
        let failures = dropped.map { change in
            OutboxFailure(change: change.change, error: error, after: change.id == record.id ? nil : record.id)
        }
        state.withLock { state in
            state.reported.failures += dropped.count
            for failure in failures { state.failureWatchers.yield(failure) }
        }
    }
}
