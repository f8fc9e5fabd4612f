import BenchmarkFixtures
import Observation
import Synchronization

/// The least any store of live, observable holders does for each holder a pushed update reaches, written with
/// the platform's primitives and nothing of ResourceKit: the measure of what a fan-out cannot go below.
///
/// Each holder is what a list of a store has to be for its users: held weakly by the store (the app decides
/// how long a screen's list lives), its items readable from any thread (behind a lock), and observable by
/// SwiftUI (an `ObservationRegistrar`). An update reaching it costs a weak reference loaded strong, the lock
/// taken to replace the item, and one Observation mutation. Nothing else: no ranks, no optimistic changes, no
/// streams, no diagnostics, no persistence hook, and a linear search of its ten items.
final class FloorHolder: Observable, Sendable {
    private let registrar = ObservationRegistrar()
    private let storage: Mutex<[Row]>

    init(_ items: [Row]) { storage = Mutex(items) }

    /// The items, registered with Observation.
    var items: [Row] {
        registrar.access(self, keyPath: \.items)
        return storage.withLock { $0 }
    }

    /// Replaces the item of `row`'s id, if the holder shows it, and tells Observation after the lock.
    func replace(_ row: Row) {
        let changed = storage.withLock { items -> Bool in
            guard let index = items.firstIndex(where: { $0.id == row.id }) else { return false }
            items[index] = row
            return true
        }
        if changed { registrar.withMutation(of: self, keyPath: \.items) {} }
    }
}

/// The holders, held weakly, and an update handed to each one alive.
final class FloorStore: Sendable {
    private final class WeakHolder: Sendable {
        weak let holder: FloorHolder?
        init(_ holder: FloorHolder) { self.holder = holder }
    }

    private let holders = Mutex<[WeakHolder]>([])

    /// A holder of `items`, which the store reaches as long as the caller keeps it.
    func holder(of items: [Row]) -> FloorHolder {
        let holder = FloorHolder(items)
        holders.withLock { $0.append(WeakHolder(holder)) }
        return holder
    }

    /// Hands `row` to every live holder, outside the store's lock, as a store must: a holder's observers may
    /// call back into the store.
    func apply(_ row: Row) {
        let live = holders.withLock { holders in holders.compactMap(\.holder) }
        for index in live.indices { live[index].replace(row) }
    }
}
