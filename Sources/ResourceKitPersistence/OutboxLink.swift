import Foundation
import ResourceKit
import Synchronization

/// How a store's resource or list reaches the store's outbox.
struct OutboxLink: MutationWrapping {
    let outbox: Outbox
    let remoteType: ObjectIdentifier
    /// The item: its value type and id (for a list, the id of the change's item; `nil` for a create).
    var item: ItemKey?

    /// The same link for item `id` of a list.
    func item(_ id: AnyHashable) -> any MutationWrapping {
        var link = self
        link.item = link.item.map { ItemKey(type: $0.type, id: id) }
        return link
    }

    /// The same link for a create of a list: no item yet.
    var creating: any MutationWrapping {
        var link = self
        link.item = nil
        return link
    }

    func run<Outcome>(
        _ kind: MutationKind, showing value: (any Sendable)?, shownID: AnyHashable?, base: MutationBase?,
        _ endpoint: Endpoint, _ session: NetworkSession, _ send: (Endpoint) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> MutationResult<Outcome> {
        let change: PendingChange.Kind =
            switch kind {
            case .create: .create
            case .update: .update
            case .delete: .delete
            }
        return try await Self.sendOrKeep(
            change, showing: value, shownID: shownID, base: base, endpoint, session, self, send)
    }

    /// Sends a change; when the outbox keeps `remoteType`'s changes, sends it with a fresh `Idempotency-Key` and
    /// keeps it under that key when the server is unreachable, or keeps it at once when an earlier change of
    /// the item is kept (so that the two reach the server in order). A kept change is
    /// `MutationResult.kept(_:)` with `NetworkError.queued(_:)` (its caller returns what it shows, or throws
    /// that error when it shows nothing); any other error is thrown. A change of a type the outbox does not
    /// keep fails while one of its item is kept, rather than overtake it.
    /// `shownID` is the id of the item a create shows meanwhile (it names no item of the server).
    static func sendOrKeep<Outcome>(
        _ kind: PendingChange.Kind, showing value: (any Sendable)?, shownID: AnyHashable? = nil,
        base: MutationBase? = nil, _ endpoint: Endpoint, _ session: NetworkSession, _ link: OutboxLink,
        _ send: (Endpoint) async throws(NetworkError) -> Outcome
    ) async throws(NetworkError) -> MutationResult<Outcome> {
        guard link.outbox.accepts(link.remoteType) else {
            if let item = link.item, link.outbox.holdsChanges(of: item) {
                throw .invalidRequest(
                    "an earlier change of this item waits in the outbox, and changes of this type are not kept "
                        + "(the store's queueWhenOffline): sent now, this one would reach the server before it")
            }
            return .sent(try await send(endpoint))
        }
        let base = link.item.map { link.outbox.known(base, of: $0, remoteType: link.remoteType) } ?? base
        // The key of the first attempt is the key of every later one: a change the server took before the
        // connection dropped is not applied twice by a server that honours the header.
        let key = UUID().uuidString
        let keyed = endpoint.setting(header: "Idempotency-Key", to: key)
        func keep(after error: NetworkError) async -> NetworkError {
            await link.outbox.keep(
                kind, key: key, remoteType: link.remoteType, id: link.item?.id ?? shownID, value: value, base: base,
                endpoint: keyed, session: session, original: error)
        }
        if let item = link.item, link.outbox.holdsChanges(of: item) {
            return try await kept(
                keep(
                    after: .invalidRequest(
                        "an earlier change of this item waits in the outbox, and this one could not be kept")))
        }
        // Sent at once with the preconditions of its base, where its type asks: a 412 is a conflict, which the
        // outbox keeps and resolves as a replayed change's.
        let conditional = kind != .create && link.outbox.isConditionalWhenOnline(link.remoteType)
        let sent =
            conditional ? OutboxRecord.conditional(keyed, on: base.map { OutboxRecord.Base($0, value: nil) }) : keyed
        if conditional, let item = link.item {
            // The version check, for a type that asks for it: the item read first.
            switch await link.outbox.checkOnline(item, base: base, remoteType: link.remoteType, session: session) {
            case .send: break
            case .unreachable(let error): return try await kept(keep(after: error))
            case .failed(let error): throw error
            case .conflict:
                let result: MutationResult<Outcome> = try await kept(
                    keep(after: .httpStatus(code: 412, body: Data())))
                link.outbox.startReplay()
                return result
            }
        }
        do {
            return .sent(try await send(sent))
        } catch  where error.isUnreachable {
            return try await kept(keep(after: error))
        } catch  where conditional && error.statusCode == 412 {
            let result: MutationResult<Outcome> = try await kept(keep(after: error))
            link.outbox.startReplay()
            return result
        }
    }
}

/// What the version check of a change sent online found.
enum OnlineCheck {
    case send
    case conflict
    case unreachable(NetworkError)
    case failed(NetworkError)
}

extension Outbox {
    /// Reads `item` before a change of it is sent online, where its type checks versions: a version other than
    /// the change's base's, or the item gone, is a conflict. `send` for a type that does not check, or a change
    /// made on a value without a version.
    func checkOnline(_ item: ItemKey, base: MutationBase?, remoteType: ObjectIdentifier, session: NetworkSession)
        async -> OnlineCheck
    {
        guard let lane = state.withLock({ $0.lanesByType[remoteType] }), lane.detection == .versionCheck,
            let version = base?.version
        else { return .send }
        do throws(NetworkError) {
            let server = try await lane.current(ofItem: item.id, in: session)
            return server.value == nil || server.base?.version != version ? .conflict : .send
        } catch  where error.isUnreachable {
            return .unreachable(error)
        } catch {
            return .failed(error)
        }
    }

    /// Whether the changes of `Remote` sent online carry preconditions.
    func isConditionalWhenOnline(_ remoteType: ObjectIdentifier) -> Bool {
        state.withLock { $0.lanesByType[remoteType]?.conditionalWhenOnline ?? false }
    }

    /// Starts a replay that nobody waits for, unless one runs (a call of ``replay()`` joins it): a change kept in
    /// a conflict found online is resolved by it. It is registered before this returns, so that a caller of
    /// ``replay()`` after the change's call waits for it.
    func startReplay() {
        state.withLock { startRun(in: &$0) }
        observation.changed()
    }
}

/// A change's result once the outbox tried to keep it: kept (with `.queued`, which its caller throws only when
/// the change shows nothing), or the error that kept it from being kept, thrown.
private func kept<Outcome>(_ error: NetworkError) throws(NetworkError) -> MutationResult<Outcome> {
    guard error.code == .queued else { throw error }
    return .kept(error)
}
