public import Observation
import Synchronization

/// The session's requests in flight, for an activity indicator: ``NetworkSession/activity``.
///
/// ``requestsInFlight`` counts calls of the session that have not ended — a call's retries, redirects and
/// credential refresh are one request, and reads coalesced by a resource are one call, so 20 concurrent
/// reads of 5 ids count 5. ``isBusy`` is what an indicator shows: it turns on with the first request and
/// turns off only once no request has been in flight for ``debounce``, so a burst of short requests is one
/// busy period instead of a flicker. Both are observable with Observation (SwiftUI) and with ``updates()``.
///
/// Nothing is computed for the indicator until something reads it: a session whose activity nobody
/// watches only counts.
public final class NetworkActivity: Sendable, Observable {
    /// What an indicator shows, as ``updates()`` delivers it.
    public struct Status: Sendable, Equatable, CustomStringConvertible {
        /// Calls of the session in flight.
        public var requestsInFlight: Int
        /// Whether a request was in flight within the last ``NetworkActivity/debounce``.
        public var isBusy: Bool

        /// Creates a status.
        /// - Parameters:
        ///   - requestsInFlight: Calls in flight.
        ///   - isBusy: Whether the indicator is on.
        public init(requestsInFlight: Int, isBusy: Bool) {
            self.requestsInFlight = requestsInFlight
            self.isBusy = isBusy
        }

        /// As in `2 in flight, busy`.
        public var description: String { "\(requestsInFlight) in flight, \(isBusy ? "busy" : "idle")" }
    }

    /// How long ``isBusy`` stays on after the last request ended: the session's `activityDebounce`, a negative
    /// one as zero and one above 10⁹ seconds as 10⁹ seconds.
    public let debounce: Duration

    private struct State {
        var status = Status(requestsInFlight: 0, isBusy: false)
        /// Bumped whenever a request starts: a pending turn-off from before it is void.
        var generation: UInt64 = 0
        var streams = Subscribers<Status>()
    }

    private let counter: ActivityCounter
    private let watched = Atomic<Bool>(false)
    private let state = Locked(State())
    private let registrar = ObservationRegistrar()
    private let timeline: Timeline

    init(counter: ActivityCounter) {
        self.counter = counter
        self.debounce = min(max(counter.debounce, .zero), .longest)
        self.timeline = counter.timeline
    }

    /// Calls of the session in flight now.
    public var requestsInFlight: Int {
        startWatching()
        registrar.access(self, keyPath: \.requestsInFlight)
        return state.withLock { $0.status.requestsInFlight }
    }

    /// Whether an activity indicator is on: a request is in flight, or one ended less than ``debounce`` ago.
    public var isBusy: Bool {
        startWatching()
        registrar.access(self, keyPath: \.isBusy)
        return state.withLock { $0.status.isBusy }
    }

    /// The current status.
    public var status: Status {
        startWatching()
        return state.withLock { $0.status }
    }

    /// A new stream of the status: first the current one, then every change, in order. Cancelling the task
    /// that iterates it unregisters it.
    /// - Returns: The stream.
    public func updates() -> AsyncStream<Status> {
        startWatching()
        return state.stream(\.streams) { state in (state.status, false) }
    }

    private func startWatching() {
        guard !watched.load(ordering: .acquiring) else { return }
        // From now on every change is tracked; start from the count as it is.
        state.withLock { state in
            guard !watched.load(ordering: .relaxed) else { return }
            let current = counter.current
            state.status = Status(requestsInFlight: current, isBusy: current > 0)
            watched.store(true, ordering: .releasing)
        }
    }

    /// A call of the session started (the counter has counted it).
    ///
    /// The count is read from the counter, not added to: a watch that starts between the counter's add and
    /// this call has counted the call already. Each update reads the count under the lock after its own
    /// change, so the last one shows every change.
    func began() {
        guard watched.load(ordering: .acquiring) else { return }
        update { state in
            state.generation &+= 1
            state.status.requestsInFlight = counter.current
            state.status.isBusy = true
        }
    }

    /// A call of the session ended (the counter has counted it).
    func ended() {
        guard watched.load(ordering: .acquiring) else { return }
        var turnOff: UInt64?
        update { state in
            state.status.requestsInFlight = counter.current
            if state.status.requestsInFlight == 0, state.status.isBusy {
                if debounce == .zero { state.status.isBusy = false } else { turnOff = state.generation }
            }
        }
        guard let generation = turnOff else { return }
        let wakeUp = timeline.now + debounce
        Task { [weak self, timeline] in
            try? await timeline.sleep(until: wakeUp)
            self?.update { state in
                if state.generation == generation, state.status.requestsInFlight == 0 { state.status.isBusy = false }
            }
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let (old, new) = state.withLock { state in
            let old = state.status
            change(&state)
            if state.status != old { state.streams.yield(state.status) }
            return (old, state.status)
        }
        if old.requestsInFlight != new.requestsInFlight {
            registrar.withMutation(of: self, keyPath: \.requestsInFlight) {}
        }
        if old.isBusy != new.isBusy { registrar.withMutation(of: self, keyPath: \.isBusy) {} }
    }
}

extension NetworkSession {
    /// The session's requests in flight, for an activity indicator (Observation and
    /// ``NetworkActivity/updates()``): the same object at every call.
    public nonisolated var activity: NetworkActivity {
        let counter = inFlight.counter
        return counter.watcher { NetworkActivity(counter: counter) }
    }
}
