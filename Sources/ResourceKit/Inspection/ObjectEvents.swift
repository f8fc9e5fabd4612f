/// A resource or a list, as its events (ObjectEventKinds.swift) name it and describe its state.
@usableFromInline protocol EventSubject: AnyObject, Sendable {
    /// The state the object shows.
    associatedtype ReportedState
    /// Where the events go: the session's feed.
    var diagnosticsFeed: DiagnosticsFeed { get }
    /// The object as events name it, as in `Resource<RemotePost> posts/42`.
    var diagnosticLabel: String { get }
    /// The object as events name it, made by its first event from ``diagnosticLabel`` (which takes a type name
    /// and a key, and a list's request can be any value) and kept: read without a lock.
    var diagnosticSubject: DiagnosticSubject { get }
    /// A state's case, never its value.
    static func diagnosticState(_ state: ReportedState) -> DiagnosticState
    /// How many callers wait for operations in flight.
    var waitingCallerCount: Int { get }
}

extension EventSubject {
    /// The label, as events and snapshots show it.
    @inlinable var cachedLabel: String { diagnosticSubject.name ?? diagnosticLabel }
}

/// What an object's transitions tell the session's feed: `stateChanged`, `cacheHit`, `joined` and
/// `operationFinished`.
///
/// Generic over the machine as well as the host, rather than reading the machine from the host's conformance:
/// the compiler (6.3) recurses without end through `Host.Machine`.
@usableFromInline struct ObjectEvents<Host: EventSubject, Machine: OperationMachine>: TransitionWatcher
where Machine.State == Host.ReportedState {
    /// Not retained: a host makes its watcher for one transition or one ask and holds itself throughout. The
    /// hosts of a store are weakly referenced, so each retain of one costs atomics on its side table.
    @usableFromInline unowned(unsafe) let host: Host

    @inlinable init(_ host: Host) { self.host = host }

    @inlinable var isActive: Bool { host.diagnosticsFeed.isActive }

    /// Makes the subject, once: a list's label describes its request, with the app's code.
    @inlinable func prepare() { _ = host.diagnosticSubject }

    @inlinable func mark(_ state: Machine.State) -> DiagnosticState { Host.diagnosticState(state) }

    // Specialized in the client like the transitions that call them (unspecialized, each event cost metadata
    // lookups), but never inlined: an event in an async frame would grow every operation's task.
    /// Emits the change to the listeners now, in the object's order, and returns the logger's record.
    @inlinable @inline(never) func changed(from before: DiagnosticState, to state: Machine.State) -> DiagnosticRecord? {
        var record = DiagnosticRecord.objectEvent(.stateChanged)
        record.setStates(from: before, to: Host.diagnosticState(state))
        return host.diagnosticsFeed.emitUnderLock(record, about: host.diagnosticSubject)
    }

    @inlinable func handOff(_ record: DiagnosticRecord) { host.diagnosticsFeed.log(record) }

    /// Tells the feed what a caller's ask did: answered from memory, or joined an operation in flight (with the
    /// callers that waited right after the join: read after the lock, the count could take in a caller that
    /// joined next). A change queued behind another shares nothing, and is not reported.
    @inlinable @inline(never) func asked(_ effects: Machine.Effects, waitingCallers: Int) {
        let kind: DiagnosticEvent.Kind
        if effects.queued { return }
        if effects.starts.isEmpty, effects.resumes.isEmpty {
            kind = .joined
        } else if effects.starts.isEmpty, effects.resumes.count == 1, case .success = effects.resumes[0].result {
            kind = .cacheHit
        } else {
            return
        }
        var record = DiagnosticRecord.objectEvent(kind)
        if kind == .joined { record.setCount(waitingCallers) }
        host.diagnosticsFeed.emit(record, about: host.diagnosticSubject)
    }

    /// A read answered from memory before it asked the machine (a fresh value, or a stale one that is being
    /// revalidated): no effects to read it from.
    @inlinable @inline(never) func answeredFromMemory() {
        host.diagnosticsFeed.emit(DiagnosticRecord.objectEvent(.cacheHit), about: host.diagnosticSubject)
    }

    @inlinable @inline(never) func finished(answering callers: Int) {
        var record = DiagnosticRecord.objectEvent(.operationFinished)
        record.setCount(callers)
        host.diagnosticsFeed.emit(record, about: host.diagnosticSubject)
    }
}
