import ResourceKit

/// Showing a kept change: the change every holder of its item shows until the change is settled.
extension Outbox {
    func show(_ record: OutboxRecord, lane: any OutboxLane) {
        let mark = ChangeMark()
        guard let store = state.withLock({ $0.store }), let (item, change) = lane.shownChange(of: record, mark: mark)
        else { return }
        state.withLock { $0.shown[record.id] = Shown(lane: lane, item: item, mark: mark, change: change) }
        lane.show(change, in: store)
    }

    func unshow(_ id: String) {
        guard
            let (shown, store) = state.withLock({ state -> (Shown, ResourceStore)? in
                guard let shown = state.shown.removeValue(forKey: id), let store = state.store else { return nil }
                return (shown, store)
            })
        else { return }
        shown.lane.withdraw(shown.change, in: store)
    }
}

extension Outbox {
    /// Shows a change's new value (a merge's) in place of the one it showed: the new one first, then the old one
    /// goes, so that no holder shows the server's value in between.
    func reshow(_ record: OutboxRecord, lane: any OutboxLane) {
        let old = state.withLock { $0.shown.removeValue(forKey: record.id) }
        show(record, lane: lane)
        guard let old, let store = state.withLock({ $0.store }) else { return }
        old.lane.withdraw(old.change, in: store)
    }
}
