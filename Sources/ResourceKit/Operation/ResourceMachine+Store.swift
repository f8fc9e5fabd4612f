// `freshness`, `conditionalBase` and `takeNews` are `@inlinable`, part of the read path a client specializes
// (see ResourceMachine.swift): they are part of the module's API surface.

/// What a store and the freshness policies ask of a resource's machine.
extension ResourceMachine {
    /// How fresh the value loaded by `key` is at `now`.
    @usableFromInline enum Freshness {
        case fresh(Value)
        case stale(Value)
        case missing
    }

    @inlinable func freshness(of key: RequestKey?, now: Duration, maxAge: Duration) -> Freshness {
        guard let key, holdsAnswer(of: key), layers.isEmpty, case .available(let value) = settled else {
            return .missing
        }
        if let loadedAt, now - loadedAt < maxAge { return .fresh(value) }
        return .stale(value)
    }

    /// The value and validators a conditional read of `key` sends, when the value shown was loaded by it.
    @inlinable func conditionalBase(for key: RequestKey?) -> KeptValue<Value>? {
        guard let key, loadedKey == key, let validators, case .available(let value) = settled else { return nil }
        return KeptValue(value: value, validators: validators)
    }

    /// What a store remembers of the resource when it is freed: its settled value, if it has one, and the read
    /// that loaded it, if one did.
    func snapshot() -> Snapshot? {
        guard case .available(let value) = settled else { return nil }
        return Snapshot(
            value: value, rank: settledRank, loadedAt: loadedAt, validators: validators, loadedKey: loadedKey)
    }

    /// What a persistent store writes of the resource: its settled value, or the value a failure keeps (the
    /// last the server gave: a refused change must not leave an older value on disk).
    func persistedSnapshot() -> Snapshot? {
        if let snapshot = snapshot() { return snapshot }
        guard case .failure(_, let previous?) = settled else { return nil }
        return Snapshot(value: previous, rank: settledRank, loadedAt: loadedAt, validators: validators, loadedKey: nil)
    }

    struct Snapshot {
        var value: Value
        var rank: UInt64
        var loadedAt: Duration?
        var validators: Validators?
        var loadedKey: RequestKey?
    }

    /// The value is stale: a fresh-only read asks the server again.
    mutating func invalidate() {
        loadedAt = nil
    }

    /// Takes the news gathered for the store.
    @inlinable mutating func takeNews() -> [ResourceNews<Value>]? {
        guard !news.isEmpty else { return nil }
        defer { news = [] }
        return news
    }

    /// News of this resource's item from another holder in the store.
    mutating func receive(_ incoming: [ResourceNews<Value>], now: Duration?) -> Effects {
        var changed = false
        for item in incoming {
            switch item.kind {
            case .fact:
                guard item.rank > valueRank else { continue }
                valueRank = item.rank
                // A conditional read sends the validators of the value it would keep on a `304`: the news's own,
                // or the ones held when the news brings the same value again (a feed refreshed, a push that
                // changed nothing); any other value has none that describe it.
                let kept = settled.value
                if item.rank > settledRank {
                    settledRank = item.rank
                    settled = item.value.map { .available($0) } ?? .idle
                } else if case .failure(let error, _) = settled {
                    // Older than a failure, newer than the value the failure keeps (see `valueRank`).
                    settled = .failure(error, previous: item.value)
                }
                if let given = item.validators {
                    validators = given
                } else if validators != nil, !sameValue(kept, item.value) {
                    validators = nil
                }
                loadedAt = item.value == nil ? nil : now
                // A read sent before this change may answer with the older value: no new caller joins it.
                joinable.removeAll()
                changed = true
            case .layer:
                // A change whose end reached us first, or will never reach us, is not shown.
                // (An outbox's change may reach a new holder twice: from the store's news, and as it is made.)
                guard let token = item.token, !token.hasEnded, !layers.contains(where: { $0.token == token }) else {
                    continue
                }
                layers.append(Layer(token: token, fact: item.fact))
                changed = true
            case .unlayer:
                guard let position = layers.firstIndex(where: { $0.token == item.token }) else { continue }
                layers.remove(at: position)
                changed = true
            }
        }
        publish(settledChanged: changed)
        return .none
    }
}

/// Whether two values are equal, when their type is `Equatable`; `false` when it is not, or either is missing.
func sameValue<Value>(_ lhs: Value?, _ rhs: Value?) -> Bool {
    guard let lhs, let rhs, let equatable = lhs as? any Equatable else { return false }
    return equatable.isEqual(to: rhs)
}

extension Equatable {
    /// Whether `other` is a value of this type equal to this one.
    fileprivate func isEqual(to other: Any) -> Bool { (other as? Self) == self }
}
