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
