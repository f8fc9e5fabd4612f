import ResourceKit

/// Showing a kept change: the optimistic layer every holder of its item shows until the change is settled.
extension Outbox {
    func show(_ record: OutboxRecord, lane: any OutboxLane) {
        let token = LayerToken()
        guard let store = state.withLock({ $0.store }), let (item, news) = lane.layer(of: record, token: token)
        else { return }
        state.withLock { $0.shown[record.id] = Shown(lane: lane, item: item, token: token, news: news) }
        lane.publish(news, in: store)
    }

    func unshow(_ id: String) {
        guard
            let (shown, store) = state.withLock({ state -> (Shown, ResourceStore)? in
                guard let shown = state.shown.removeValue(forKey: id), let store = state.store else { return nil }
                return (shown, store)
            })
        else { return }
        // Ended before the news leaves: a holder that hears the layer late never shows it (see `LayerToken`).
        shown.token.end()
        shown.lane.unlayer(shown.news, in: store)
    }
}

extension Outbox {
    /// Shows a change's new value (a merge's) in place of the one it showed: the new layer first, then the old one
    /// goes, so that no holder shows the server's value in between.
    func reshow(_ record: OutboxRecord, lane: any OutboxLane) {
        let old = state.withLock { $0.shown.removeValue(forKey: record.id) }
        show(record, lane: lane)
        guard let old, let store = state.withLock({ $0.store }) else { return }
        old.token.end()
        old.lane.unlayer(old.news, in: store)
    }
}
