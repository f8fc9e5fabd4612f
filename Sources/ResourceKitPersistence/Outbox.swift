import Foundation
public import ResourceKit
import Synchronization

/// Changes made while the server was unreachable, kept on disk in order until they reach it: a store's
/// offline outbox.
///
/// ```swift
/// let persistence = StorePersistence(
///     storage: try FileEntryStorage(directory: base.appendingPathComponent("entries")),
///     outbox: try FileEntryStorage(directory: base.appendingPathComponent("outbox")),
///     queueWhenOffline: [.resources(RemotePost.self)])
/// let store = ResourceStore(session: session, persistence: persistence)
///
/// // RemotePost: Readable & Updatable, read by the post's id. Sent, or kept when the server cannot be
/// // reached: either way the call returns `edited`, and every holder shows it.
/// try await store.resource(RemotePost.self, id: id).update(edited, optimistic: edited)
/// let waiting = store.outbox?.pending ?? []  // the kept changes, in order
/// await store.outbox?.replay()  // sends them when the server is back
/// ```
///
/// - **What is kept.** An update or delete through a store's resource of a type its persistence lists as
///   ``OfflineQueueing/resources(_:conflicts:conditionalWhenOnline:)``, or a create, update or delete through a store's list of a type it lists
///   as ``OfflineQueueing/list(_:)``, that fails because the server cannot be reached
///   (`NetworkError.isUnreachable`), and every later change of an item that still has one kept. Once the
///   change is stored durably (from then on it survives a crash), the call returns what the change shows: an
///   update's or a create's optimistic value, or nothing for a deletion. A kept change that shows nothing (an
///   update or a create without an optimistic value) has nothing to return: its call throws
///   `NetworkError.queued(_:)`, whose `queuedChange` is the change's ``PendingChange/id``. A change kept is
///   not a failure: the resource's state never becomes `failure`, and shows the change when it has
///   something to show.
/// - **Shown everywhere.** Every resource and list holding the item shows the change (an update's optimistic
///   value, a deletion's absence) over the server's value until it lands or is rolled back, in objects made
///   later too, and after a restart in a store that lists the type again. A kept create shows its placeholder
///   (`ListResource.create(_:optimistic:)`) where the lists place created items, or nowhere without one.
/// - **Replay.** ``replay()`` sends the kept changes in the order they were made, one at a time, each with
///   its ``PendingChange/id`` as `Idempotency-Key` (the key its first attempt was sent with; a change resolved
///   after a conflict is a new request, with a new key). A change that
///   lands is shown as the server answered (one whose answer does not decode has landed, and is read again).
///   An unreachable server, a `401`, `408`, `429` or any `5xx` stops the replay and keeps the rest for the
///   next one. Any other error is a refusal: the change is rolled back in every holder and reported on ``failures()``, and
///   so is every later change of the same item (made on top of it); changes of other items go on. A deletion
///   answered `404` has landed (the item is gone).
/// - **Conflicts.** A replayed update or deletion is conditional on the value it was made on
///   (``PendingChange/base``): `If-Match` with its `ETag`, or `If-Unmodified-Since` with its `Last-Modified`
///   (``ConflictDetection``). A `412 Precondition Failed` means someone else changed or deleted the item
///   meanwhile: the change is neither sent over their change nor dropped. The type's ``ConflictPolicy``
///   resolves it, or (the default) it is held: still shown in every holder, listed in ``held`` with the base,
///   your value and the server's, kept across restarts, and not sent until ``resolve(_:with:)``; later changes
///   of its item wait behind it. Every conflict is reported on ``conflicts()``. A change that lands is the base
///   of the later changes of its item.
/// - **Seen and cancelled.** ``pending`` lists the changes, ``changes()`` streams the list, and
///   ``cancel(_:)`` rolls one back everywhere.
public final class Outbox: Sendable {
    /// Where the changes are kept.
    public let storage: any EntryStorage

    struct State {
        weak var store: ResourceStore?
        /// The kept changes, in order.
        var records: [OutboxRecord] = []
        /// The change being sent: it cannot be cancelled.
        var sending: String?
        /// Held changes being resolved: they cannot be cancelled or resolved again meanwhile.
        var resolving: Set<String> = []
        /// Changes the app resolved: a replay running sends them again, though it tried them already.
        var resumed: Set<String> = []
        /// What each shown change shows: its item and its layer.
        var shown: [String: Shown] = [:]
        var lanes: [String: any OutboxLane] = [:]
        var lanesByType: [ObjectIdentifier: any OutboxLane] = [:]
        var nextSequence: UInt64 = 1
        /// The replay running, and the callers waiting for it.
        var replay: ReplayRun?
        /// The latest replay's task, running or ended: a new run starts after it, so two never send at once.
        var lastReplay: Task<Void, Never>?
        /// Numbers replay runs and their callers.
        var nextReplay: UInt64 = 0
        var watchers = Subscribers<[PendingChange]>()
        var failureWatchers = Subscribers<OutboxFailure>()
        var conflictWatchers = Subscribers<OutboxConflict>()
        /// Why each held change's policy could not resolve it, in this launch.
        var holdErrors: [String: NetworkError] = [:]
        /// What the outbox last showed of each item as the server's (a landed change's answer, the server's
        /// value kept in a conflict), with its validators: the holders get the value without them. By
        /// ``landedKey(type:item:)``; kept on disk, so that a change made on the value after a restart knows them.
        var landed: [String: OutboxRecord.Base] = [:]
        /// How many conflicts and failures were reported since the outbox was made: for tests of the package, to
        /// wait for a stream to have read them all.
        var reported = (conflicts: 0, failures: 0)
        var lastError: NetworkError?
        /// How many wipes the outbox had: a change kept across one is not written.
        var wipes: UInt64 = 0
    }

    /// A replay and who waits for it. A caller that is cancelled stops waiting; the run stops when none waits.
    struct ReplayRun {
        let id: UInt64
        let task: Task<Void, Never>
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    struct Shown {
        var lane: any OutboxLane
        var item: ItemKey
        var mark: ChangeMark
        /// `ShownChange<Value>`: what holders show, for holders made later too.
        var change: any Sendable
    }

    let state: Locked<State>
    /// One queue for the storage's calls, so that they reach it in order.
    let io = DispatchQueue(label: "ResourceKit.Outbox", qos: .utility)

    /// Reads the changes kept in `storage`; one that fails its checks is dropped, one that cannot be read is
    /// skipped (``lastError``), and new changes are numbered after every key found, so that none overwrites a
    /// kept one.
    init(storage: any EntryStorage) {
        self.storage = storage
        // A kept change is an edit the user made: no bound may evict it.
        (storage as? any EvictionControlling)?.keepEveryEntry()
        var state = State()
        // Never below the clock in microseconds: numbers stay increasing across launches even when the keys
        // of the last one could not be listed.
        var floor = UInt64(max(0, Date().timeIntervalSince1970 * 1e6))
        do throws(NetworkError) {
            let all = try storage.allKeys()
            let keys = all.filter { $0.hasPrefix("change-") }.sorted()
            let decoder = JSONDecoder()
            for key in all where key.hasPrefix(Self.landedPrefix) {
                // A base that cannot be read is one the next change goes without: nothing is lost.
                guard let entry = try? storage.entry(for: key),
                    let base = try? decoder.decode(OutboxRecord.Base.self, from: entry.value)
                else { continue }
                state.landed[String(key.dropFirst(Self.landedPrefix.count))] = base
            }
            // Numbers are microseconds since 1970 or just above: one of 2⁶³ or more is damaged (it would overflow
            // the next number), and its change is not loaded.
            let damaged: UInt64 = 1 << 63
            for key in keys {
                if let number = UInt64(key.dropFirst("change-".count)), number < damaged { floor = max(floor, number) }
                do throws(NetworkError) {
                    guard let entry = try storage.entry(for: key),
                        let record = try? decoder.decode(OutboxRecord.self, from: entry.value),
                        record.sequence < damaged
                    else { continue }
                    state.records.append(record)
                } catch {
                    state.lastError = error
                }
            }
        } catch {
            state.lastError = error
        }
        state.nextSequence = max(floor, state.records.map(\.sequence).max() ?? 0) + 1
        self.state = Locked(state)
    }

    func attach(_ store: ResourceStore) { state.withLock { $0.store = store } }

    /// Tells Observation of changes to ``pending`` and to the replay's callers, for the package's tests.
    let observation = ObservationPoint()

    /// The kept changes, in the order they will be sent.
    public var pending: [PendingChange] {
        observation.track()
        return state.withLock { $0.records.map(\.change) }
    }

    /// The error of the last call to the storage, if it failed: reading the kept changes at launch, keeping a
    /// change (the call then throws the server's error instead of returning, or of throwing
    /// `NetworkError.queued(_:)` for a change that shows nothing), or removing one that
    /// landed (it is then sent again at the next launch, with the same `Idempotency-Key`). `nil` when the last
    /// call succeeded.
    public var lastError: NetworkError? { state.withLock { $0.lastError } }

    /// How many conflicts and failures the outbox reported since it was made: for tests of the package.
    var reportCounts: (conflicts: Int, failures: Int) { state.withLock { $0.reported } }

    /// How many callers of ``replay()`` wait for the replay running: for tests of the package.
    var replayCallerCount: Int {
        observation.track()
        return state.withLock { $0.replay?.waiters.count ?? 0 }
    }

    /// A stream of ``pending``: the list now, then the list after each change is kept, lands, is refused or
    /// is cancelled. It keeps the newest list only, and ends when the reading task is cancelled.
    public func changes() -> AsyncStream<[PendingChange]> {
        state.stream(\.watchers, buffering: .bufferingNewest(1)) { state in (state.records.map(\.change), false) }
    }

    /// A stream of the changes that will not reach the server: refused on replay, or rolled back after the
    /// refused change of their item. It gets the failures from its making on (make it before you replay), keeps
    /// each until read, and ends when the reading task is cancelled.
    public func failures() -> AsyncStream<OutboxFailure> { reports(\.failureWatchers) }

    /// A stream of reports from its making on, each kept until read, registered in `watchers` until the reading
    /// task is cancelled: what ``failures()`` and ``conflicts()`` return.
    func reports<Report>(_ watchers: any WritableKeyPath<State, Subscribers<Report>> & Sendable)
        -> AsyncStream<Report>
    {
        state.stream(watchers)
    }

    /// Rolls back a kept change: every holder of its item shows it without the change again, and it is never
    /// sent. A change being sent right now, or being resolved (``resolve(_:with:)``), cannot be cancelled.
    /// - Parameter id: The change's ``PendingChange/id``.
    /// - Returns: Whether the change was found and cancelled.
    /// - Throws: `NetworkError.file(_:)` when the storage could not remove it; it is then kept.
    @discardableResult
    public func cancel(_ id: String) async throws(NetworkError) -> Bool {
        // Out of the list at once, so that a replay starting now does not send it.
        guard
            let record = state.withLock({ state -> OutboxRecord? in
                guard state.sending != id, !state.resolving.contains(id),
                    let position = state.records.firstIndex(where: { $0.id == id })
                else {
                    return nil
                }
                return state.records.remove(at: position)
            })
        else { return false }
        do throws(NetworkError) {
            try await perform { storage throws(NetworkError) in try storage.removeEntries(for: [record.storageKey]) }
        } catch {
            state.withLock { state in
                let position = state.records.firstIndex { $0.sequence > record.sequence } ?? state.records.endIndex
                state.records.insert(record, at: position)
            }
            throw error
        }
        unshow(id)
        notify()
        return true
    }

    // MARK: For the store

    /// Gives the outbox a type it keeps changes of, and shows that type's kept changes in every holder.
    func register(_ lane: any OutboxLane) {
        let records = state.withLock { state -> [OutboxRecord] in
            state.lanes[lane.name] = lane
            state.lanesByType[lane.remoteType] = lane
            return state.records.filter { $0.type == lane.name && state.shown[$0.id] == nil }
        }
        for record in records { show(record, lane: lane) }
    }

    /// Logs, at `LogLevel.error`, the kept changes of each type name no type given to the store claims: they
    /// wait, neither sent nor shown, for a run that gives their type. Said aloud, since a type that declared
    /// its `persistenceName` without adopting ``PersistedResource`` names its changes otherwise now, and would
    /// leave them waiting unseen.
    func reportUnclaimed(to logger: any NetworkLogging) {
        guard logger.minimumLevel <= .error else { return }
        let unclaimed = state.withLock { state in
            Dictionary(grouping: state.records.filter { state.lanes[$0.type] == nil }, by: \.type).mapValues(\.count)
        }
        for (name, count) in unclaimed.sorted(by: { $0.key < $1.key }) {
            var event = DiagnosticEvent(.unclaimedChanges)
            event.itemType = name
            event.itemCount = count
            event.error = .invalidRequest(
                "the outbox keeps \(count) change(s) of \"\(name)\", which no type given to the store names: they wait"
                    + " for a run that gives it (a type that declares persistenceName must adopt PersistedResource)")
            logger.log(.error, event)
        }
    }

    /// Whether changes of `Remote` are kept when the server is unreachable.
    func accepts(_ remoteType: ObjectIdentifier) -> Bool { state.withLock { $0.lanesByType[remoteType] != nil } }

    /// Whether a change of `item` is kept: a new change of it must wait behind it.
    func holdsChanges(of item: ItemKey) -> Bool {
        state.withLock { state in
            state.shown.values.contains { $0.item == item }
                || state.records.contains { record in
                    state.lanes[record.type].map { $0.itemKey(of: record) == item } ?? false
                }
        }
    }

    /// What the kept changes of `item` (for a resource made now), or of every item of `itemType` (`item` `nil`,
    /// for a list) show, oldest first: `[ShownChange<Value>]`, boxed.
    func shownChanges(ofType itemType: ObjectIdentifier, item: ItemKey?) -> [any Sendable] {
        state.withLock { state in
            state.records.compactMap { record in
                guard let shown = state.shown[record.id], shown.item.type == itemType, item == nil || shown.item == item
                else { return nil }
                return shown.change
            }
        }
    }

    /// Keeps a change that could not reach the server, once it is stored durably; returns
    /// `NetworkError.queued(_:)` when it kept it (its caller then returns what the change shows, or throws
    /// that error when it shows nothing), or `original` when it could not be kept.
    /// - Parameter key: The change's id: the `Idempotency-Key` its first attempt was sent with.
    func keep(
        _ kind: PendingChange.Kind, key: String, remoteType: ObjectIdentifier, id: AnyHashable?,
        value: (any Sendable)?, base: MutationBase? = nil, endpoint: Endpoint, session: NetworkSession,
        original: NetworkError
    ) async -> NetworkError {
        guard let lane = state.withLock({ $0.lanesByType[remoteType] }) else { return original }
        // A create names no item; the id it has is the one of what it shows (nothing without an optimistic item).
        let encoded = id.map { lane.encode(id: $0, value: value) } ?? (item: Data(), value: nil)
        guard let (item, data) = encoded else { return original }
        let frozen: (body: Data, contentType: String)?
        do throws(NetworkError) {
            frozen = try endpoint.body.map { body throws(NetworkError) in try session.encodeBody(body) }
        } catch {
            return original
        }
        let (sequence, wipes) = state.withLock { state in
            defer { state.nextSequence += 1 }
            return (state.nextSequence, state.wipes)
        }
        let record = OutboxRecord(
            sequence: sequence, id: key, type: lane.name, kind: kind.name, item: item,
            itemDescription: kind == .create ? "" : id.map { "\($0.base)" } ?? "", value: kind == .delete ? nil : data,
            queuedAt: Date(),
            method: endpoint.method.rawValue, path: endpoint.path,
            query: endpoint.queryItems.map { .init(name: $0.name, value: $0.value) },
            headers: endpoint.headers.map { .init(name: $0.name, value: $0.value) }, body: frozen?.body,
            contentType: frozen?.contentType,
            base: base.map { OutboxRecord.Base($0, value: $0.value.flatMap { lane.encode(value: $0) }) })
        do throws(NetworkError) {
            try await save(new: record, unlessWipedSince: wipes)
        } catch {
            state.withLock { $0.lastError = error }
            return original
        }
        state.withLock { $0.lastError = nil }
        // Shown before it is listed: a replay can send it only once it is listed, so its layer never comes after
        // its landing.
        show(record, lane: lane)
        let listed = state.withLock { state in
            // A wipe since it began: the change is not kept, as one made after the wipe is not.
            guard state.wipes == wipes else { return false }
            let position = state.records.firstIndex { $0.sequence > record.sequence } ?? state.records.endIndex
            state.records.insert(record, at: position)
            return true
        }
        guard listed else {
            unshow(record.id)
            return original
        }
        notify()
        return .queued(record.id)
    }

}
