public import Observation
import Synchronization

#if canImport(FoundationNetworking)
    package import Foundation
    import FoundationNetworking
#else
    package import Foundation
#endif

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

    /// How long ``isBusy`` stays on after the last request ended.
    public let debounce: Duration

    private struct State {
        var status = Status(requestsInFlight: 0, isBusy: false)
        /// Bumped whenever a request starts: a pending turn-off from before it is void.
        var generation: UInt64 = 0
        var streams: [UInt64: AsyncStream<Status>.Continuation] = [:]
        var nextStream: UInt64 = 0
    }

    private let count = Atomic<Int>(0)
    private let watched = Atomic<Bool>(false)
    private let state = Locked(State())
    private let registrar = ObservationRegistrar()
    private let timeline: Timeline

    init(debounce: Duration, timeline: Timeline) {
        self.debounce = max(debounce, .zero)
        self.timeline = timeline
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
        let (stream, continuation) = AsyncStream.makeStream(of: Status.self)
        let id = state.withLock { state in
            state.nextStream &+= 1
            state.streams[state.nextStream] = continuation
            continuation.yield(state.status)
            return state.nextStream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    private func startWatching() {
        guard !watched.load(ordering: .acquiring) else { return }
        // From now on every change is tracked; start from the count as it is.
        state.withLock { state in
            guard !watched.load(ordering: .relaxed) else { return }
            let current = count.load(ordering: .relaxed)
            state.status = Status(requestsInFlight: current, isBusy: current > 0)
            watched.store(true, ordering: .releasing)
        }
    }

    /// A call of the session started.
    func began() {
        count.add(1, ordering: .relaxed)
        guard watched.load(ordering: .acquiring) else { return }
        update { state in
            state.generation &+= 1
            state.status.requestsInFlight += 1
            state.status.isBusy = true
        }
    }

    /// A call of the session ended.
    func ended() {
        count.subtract(1, ordering: .relaxed)
        guard watched.load(ordering: .acquiring) else { return }
        var turnOff: UInt64?
        update { state in
            state.status.requestsInFlight = max(0, state.status.requestsInFlight - 1)
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
        let (old, new, streams) = state.withLock { state in
            let old = state.status
            change(&state)
            // Yielded under the lock, so every stream sees the changes in order.
            if state.status != old { for stream in state.streams.values { stream.yield(state.status) } }
            return (old, state.status, state.streams.isEmpty)
        }
        _ = streams
        if old.requestsInFlight != new.requestsInFlight {
            registrar.withMutation(of: self, keyPath: \.requestsInFlight) {}
        }
        if old.isBusy != new.isBusy { registrar.withMutation(of: self, keyPath: \.isBusy) {} }
        Changes.raise()
    }
}

/// The session's calls in flight, for snapshots and the activity count.
package final class InFlightRequests: Sendable {
    package struct Entry: Sendable {
        package var method: String
        package var url: URL?
        package var startedAt: Duration
        package var attempt: Int
        /// The calling task's hash: a store's snapshot matches it against its objects' operations to tell
        /// how many callers share the request.
        package var task: Int?
    }

    private let entries = Locked<(next: UInt64, all: [UInt64: Entry])>((0, [:]))
    let activity: NetworkActivity

    init(activity: NetworkActivity) { self.activity = activity }

    /// Registers a call.
    func begin(method: String, url: URL?, at now: Duration) -> UInt64 {
        let task = withUnsafeCurrentTask { $0?.hashValue }
        let entry = Entry(method: method, url: url, startedAt: now, attempt: 1, task: task)
        let id = entries.withLock { entries in
            entries.next &+= 1
            entries.all[entries.next] = entry
            return entries.next
        }
        activity.began()
        return id
    }

    func setAttempt(_ attempt: Int, of id: UInt64) {
        entries.withLock { entries in entries.all[id]?.attempt = attempt }
    }

    /// The request as diagnostic events name it, its URL redacted, for a call that began before anyone
    /// listened; `nil` once it ended.
    func subject(of id: UInt64, redaction: LogRedaction) -> DiagnosticSubject? {
        guard let (method, url) = entries.withLock({ $0.all[id].map { ($0.method, $0.url) } }) else { return nil }
        return DiagnosticSubject(method: method, url: redaction.redact(url), object: nil, itemType: nil, source: url)
    }

    func end(_ id: UInt64) {
        entries.withLock { _ = $0.all.removeValue(forKey: id) }
        activity.ended()
    }

    package var current: [(id: UInt64, entry: Entry)] {
        entries.withLock { $0.all.map { ($0.key, $0.value) } }.sorted { $0.id < $1.id }
    }
}
