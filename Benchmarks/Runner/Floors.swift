import BenchmarkFixtures
import Foundation
import Observation
import ResourceKit
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What the platform makes any library of live, observable objects pay, written with its primitives and nothing
// of ResourceKit: the floors that ResourceKit's rows are read against.

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

/// The least a read of a shared, observable object does on the platform, around the same transport and decoder.
///
/// What a read must be for the users of such an object, and nothing more: its caller can be cancelled
/// (`withTaskCancellationHandler`), so it waits on a continuation registered under the object's lock; the work
/// runs in a task of its own (immediate where the platform has it, as ResourceKit's), so that it outlives a
/// cancelled caller and other callers can join it; and Observation hears of `loading` and of the answer. No
/// request building, no retries or deadline, no validation, no diagnostics, no ranks.
final class FloorReader: Observable, Sendable {
    private struct State {
        var value: Row?
        var isLoading = false
        var waiters: [CheckedContinuation<Row, any Error>] = []
    }

    private let registrar = ObservationRegistrar()
    private let state = Mutex(State())
    private let transport: InstantTransport
    private let request: URLRequest

    init(transport: InstantTransport, request: URLRequest) {
        self.transport = transport
        self.request = request
    }

    /// The value, registered with Observation.
    var value: Row? {
        registrar.access(self, keyPath: \.value)
        return state.withLock { $0.value }
    }

    /// Sends the request, or joins the one in flight, and returns its decoded answer.
    func read() async throws -> Row {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Row, any Error>) in
                let starts = state.withLock { state -> Bool in
                    state.waiters.append(continuation)
                    guard !state.isLoading else { return false }
                    state.isLoading = true
                    return true
                }
                guard starts else { return }
                registrar.withMutation(of: self, keyPath: \.value) {}
                let work: @Sendable () async -> Void = { [self] in
                    let result: Result<Row, any Error>
                    do {
                        let body = try await transport.send(request).body
                        result = .success(try JSONDecoder().decode(Row.self, from: body))
                    } catch {
                        result = .failure(error)
                    }
                    let waiters = state.withLock { state in
                        state.isLoading = false
                        if case .success(let row) = result { state.value = row }
                        defer { state.waiters = [] }
                        return state.waiters
                    }
                    registrar.withMutation(of: self, keyPath: \.value) {}
                    for waiter in waiters { waiter.resume(with: result) }
                }
                if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                    Task.immediate(operation: work)
                } else {
                    Task(operation: work)
                }
            }
        } onCancel: {
            // A cancelled caller is answered by the work's end here; ResourceKit answers it at once. The lock is
            // taken as it would be to find the caller.
            state.withLock { _ = $0.waiters.count }
        }
    }
}
