import Synchronization

#if canImport(FoundationNetworking)
    package import Foundation
    import FoundationNetworking
#else
    package import Foundation
#endif

/// Told when a call of the session begins and ends, once something watches the session's activity
/// (ResourceKitInspection's `NetworkActivity`, the only one).
package protocol ActivityWatching: AnyObject, Sendable {
    /// A call began; ``ActivityCounter/current`` counts it already.
    func began()
    /// A call ended; ``ActivityCounter/current`` counts it no longer.
    func ended()
}

/// The session's calls in flight, counted always (one atomic add a call), and the watcher that turns them into
/// an activity indicator, installed the first time something asks for it.
package final class ActivityCounter: Sendable {
    private final class Installed: Sendable {
        let watcher: any ActivityWatching
        init(_ watcher: any ActivityWatching) { self.watcher = watcher }
    }

    private let count = Atomic<Int>(0)
    /// How long an indicator stays on after the last call ended.
    package let debounce: Duration
    package let timeline: Timeline
    private let installed = AtomicLazyReference<Installed>()

    /// Calls in flight now.
    package var current: Int { count.load(ordering: .relaxed) }

    init(debounce: Duration, timeline: Timeline) {
        self.debounce = debounce
        self.timeline = timeline
    }

    func began() {
        count.add(1, ordering: .relaxed)
        installed.load()?.watcher.began()
    }

    func ended() {
        count.subtract(1, ordering: .relaxed)
        installed.load()?.watcher.ended()
    }

    /// The watcher: made by `make` the first time, the same one at every call after (of two first calls at
    /// once, one's is kept and returned to both).
    package func watcher(_ make: () -> any ActivityWatching) -> any ActivityWatching {
        if let installed = installed.load() { return installed.watcher }
        return installed.storeIfNil(Installed(make())).watcher
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
    package let counter: ActivityCounter

    init(counter: ActivityCounter) { self.counter = counter }

    /// Registers a call.
    func begin(method: String, url: URL?, at now: Duration) -> UInt64 {
        let task = withUnsafeCurrentTask { $0?.hashValue }
        let entry = Entry(method: method, url: url, startedAt: now, attempt: 1, task: task)
        let id = entries.withLock { entries in
            entries.next &+= 1
            entries.all[entries.next] = entry
            return entries.next
        }
        counter.began()
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
        counter.ended()
    }

    package var current: [(id: UInt64, entry: Entry)] {
        entries.withLock { $0.all.map { ($0.key, $0.value) } }.sorted { $0.id < $1.id }
    }
}
