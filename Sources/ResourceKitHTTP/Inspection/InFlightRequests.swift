import Synchronization

#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// The session's calls in flight, counted always (one atomic add a call), and the ``NetworkActivity`` that
/// turns them into an activity indicator, made the first time something asks for it.
final class ActivityCounter: Sendable {
    private let count = Atomic<Int>(0)
    /// How long an indicator stays on after the last call ended.
    let debounce: Duration
    let timeline: Timeline
    private let installed = AtomicLazyReference<NetworkActivity>()

    /// Calls in flight now.
    var current: Int { count.load(ordering: .relaxed) }

    init(debounce: Duration, timeline: Timeline) {
        self.debounce = debounce
        self.timeline = timeline
    }

    func began() {
        count.add(1, ordering: .relaxed)
        installed.load()?.began()
    }

    func ended() {
        count.subtract(1, ordering: .relaxed)
        installed.load()?.ended()
    }

    /// The activity: made by `make` the first time, the same one at every call after (of two first calls at
    /// once, one's is kept and returned to both).
    func watcher(_ make: () -> NetworkActivity) -> NetworkActivity {
        if let installed = installed.load() { return installed }
        return installed.storeIfNil(make())
    }
}

/// The session's calls in flight, for snapshots and the activity count.
final class InFlightRequests: Sendable {
    struct Entry: Sendable {
        var method: String
        var url: URL?
        var startedAt: Duration
        var attempt: Int
        /// The calling task's hash: a store's snapshot matches it against its objects' operations to tell
        /// how many callers share the request.
        var task: Int?
    }

    private let entries = Locked<(next: UInt64, all: [UInt64: Entry])>((0, [:]))
    let counter: ActivityCounter

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
        return DiagnosticSubject(method: method, url: redaction.redact(url), source: url)
    }

    func end(_ id: UInt64) {
        entries.withLock { _ = $0.all.removeValue(forKey: id) }
        counter.ended()
    }

    var current: [(id: UInt64, entry: Entry)] {
        entries.withLock { $0.all.map { ($0.key, $0.value) } }.sorted { $0.id < $1.id }
    }
}
