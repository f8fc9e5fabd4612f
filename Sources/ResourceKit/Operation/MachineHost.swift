public import Observation

// `@inlinable` over `@usableFromInline internal` declarations, so that a client specializes the read path
// for its own types (unspecialized, it spends its time in generic metadata lookups): this makes them part
// of the module's API surface, and a change to them a change clients compile against.

/// A machine, and the feed its `states` streams read.
@usableFromInline struct HostStorage<Machine: OperationMachine> {
    @usableFromInline var machine: Machine
    /// Made by the first `states` stream: an object nobody streams publishes nothing.
    @usableFromInline var feed: StateFeed<Machine.State>?

    @inlinable init(_ machine: Machine) { self.machine = machine }
}

/// How a `states` stream buffers the states its consumer has not read yet.
///
/// A struct with static members, so that a later release can add policies without breaking your code.
public struct StateBuffering: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline let keepsOnlyNewest: Bool
    @inlinable init(keepsOnlyNewest: Bool) { self.keepsOnlyNewest = keepsOnlyNewest }

    /// Every change, in order: what a test or a service that must see each step wants.
    @inlinable public static var everyChange: StateBuffering { StateBuffering(keepsOnlyNewest: false) }
    /// Only the newest state: what a screen that draws the current state wants. A slow consumer skips the
    /// states it missed and holds one state at most.
    @inlinable public static var latest: StateBuffering { StateBuffering(keepsOnlyNewest: true) }

    /// The policy's name.
    public var description: String { keepsOnlyNewest ? "latest" : "everyChange" }
}

/// An object whose state machine lives behind a ``Locked`` storage: ``Resource`` and ``ListResource``.
///
/// Every event is one transition in one critical section. Its effects (answering callers, cancelling and
/// starting work) run after the lock; a changed state is published to the object's ``StateFeed`` in that
/// critical section, so streams read every change in order, and the streams that waited are woken after it,
/// so `state` stays readable.
@usableFromInline protocol MachineHost: AnyObject, Sendable, Observable {
    associatedtype Machine: OperationMachine
    var storage: Locked<HostStorage<Machine>> { get }
    var registrar: ObservationRegistrar { get }
    /// Made once per object: forming a key path on a generic class instantiates it at run time.
    var stateKeyPath: any KeyPath<Self, Machine.State> & Sendable { get }
    /// Tells the store what the machine learnt about items; called outside the lock.
    func forward(_ news: Machine.News)
    /// Where diagnostic events go: the session's feed.
    var diagnosticsFeed: DiagnosticsFeed { get }
    /// The object as diagnostics name it, as in `Resource<RemotePost> posts/42`.
    var diagnosticLabel: String { get }
    /// The object as events name it, made by its first event from ``diagnosticLabel`` (which takes a type name
    /// and a key, and a list's request can be any value) and kept: read without a lock.
    var diagnosticSubject: DiagnosticSubject { get }
    /// A state's case, never its value.
    static func diagnosticState(_ state: Machine.State) -> DiagnosticState
}

extension MachineHost {
    @usableFromInline typealias Effects = Machine.Effects

    /// The current state, registered with Observation.
    var observedState: Machine.State {
        registrar.access(self, keyPath: stateKeyPath)
        return storage.withLock { $0.machine.state }
    }

    /// Applies one event to the machine; then tells Observation and delivers the change, outside the lock.
    @inlinable func transition<R>(_ event: (inout Machine) -> R) -> R {
        // The logger's copy of a state change, handed to it after the lock: a logger may read this object.
        var logged: DiagnosticEvent?
        let (result, changed, woken, news) = storage.withLock {
            storage -> (R, Bool, [StateReader<Machine.State>], Machine.News?) in
            let version = storage.machine.version
            // The state before, as an event describes it (a few bytes), when someone listens.
            let before = diagnosticsFeed.isActive ? Self.diagnosticState(storage.machine.state) : nil
            let result = event(&storage.machine)
            let news = storage.machine.takeNews()
            guard storage.machine.version != version else { return (result, false, [], news) }
            // Emitted under the lock, so events follow the object's transitions in order; the logger's copy is
            // handed over after it.
            if let before {
                logged = emitStateChange(from: before, to: storage.machine.state, subject: diagnosticSubject)
            }
            guard let feed = storage.feed else { return (result, true, [], news) }
            return (result, true, feed.publish(storage.machine.state), news)
        }
        if let logged { diagnosticsFeed.log(logged) }
        if changed { registrar.withMutation(of: self, keyPath: stateKeyPath) {} }
        if let feed = woken.first?.feed { feed.wake(woken) }
        // The store hears of it after this object's own observers, and before the caller goes on.
        if let news { forward(news) }
        Changes.raise()
        return result
    }

    // Specialized in the client like the transitions that call them (unspecialized, each event cost metadata
    // lookups), but never inlined: an event in an async frame would grow every operation's task.
    /// Returns the event for the logger, to hand it after the lock.
    @inlinable @inline(never) func emitStateChange(
        from before: DiagnosticState, to state: Machine.State, subject: DiagnosticSubject
    ) -> DiagnosticEvent? {
        var record = DiagnosticRecord(.stateChanged)
        record.previousState = before
        record.state = Self.diagnosticState(state)
        return diagnosticsFeed.emitUnderLock(record, about: subject)
    }

    /// Tells the feed what a caller's ask did: answered from memory, or joined an operation in flight.
    @inlinable @inline(never) func emitAsk(_ effects: Effects) {
        let kind: DiagnosticEvent.Kind
        if effects.starts.isEmpty, effects.resumes.isEmpty {
            kind = .joined
        } else if effects.starts.isEmpty, effects.resumes.count == 1, case .success = effects.resumes[0].result {
            kind = .cacheHit
        } else {
            return
        }
        var record = DiagnosticRecord(kind)
        if kind == .joined { record.count = machineWaitingCallerCount }
        diagnosticsFeed.emit(record, about: diagnosticSubject)
    }

    @inlinable @inline(never) func emitFinished(callers: Int) {
        var record = DiagnosticRecord(.operationFinished)
        record.count = callers
        diagnosticsFeed.emit(record, about: diagnosticSubject)
    }

    /// The label, as events and snapshots show it.
    @inlinable var cachedLabel: String { diagnosticSubject.object ?? diagnosticLabel }

    /// Asks for an operation and waits for its answer.
    ///
    /// `ask` runs in the same critical section that registers the caller: it decides whether to answer at
    /// once, join an operation in flight, or start one. A caller cancelled at any point gets `.cancelled`.
    @inlinable func perform(
        _ ask: (inout Machine, CallID, OperationWaiter<Machine.Outcome>) -> Effects
    ) async -> Result<Machine.Outcome, NetworkError> {
        let call = CallID.next()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: OperationWaiter<Machine.Outcome>) in
                let effects = transition { machine -> Effects in
                    // The cancellation flag is set before a handler runs; checked under the lock, it closes the
                    // window between drawing the id and registering.
                    guard !Task.isCancelled else {
                        var effects = Effects.none
                        effects.resume(waiter, with: .failure(.cancelled))
                        return effects
                    }
                    return ask(&machine, call, waiter)
                }
                if diagnosticsFeed.isActive { emitAsk(effects) }
                run(effects)
            }
        } onCancel: {
            run(transition { $0.cancel(call) })
        }
    }

    /// Runs a transition's effects; never called with the lock held.
    @inlinable func run(_ effects: Effects) {
        for resumption in effects.resumes { resumption.waiter.resume(returning: resumption.result) }
        for task in effects.cancels { task.cancel() }
        for start in effects.starts { launch(start) }
    }

    @inlinable func launch(_ start: Effects.Start) {
        let body: @Sendable () async -> Void = { [self] in
            if start.beginsFirst {
                let (shouldRun, effects) = transition { $0.begin(start.operation) }
                run(effects)
                guard shouldRun else { return }
            }
            let result = await start.work(start.context)
            let effects = transition { $0.finish(start.operation, with: result) }
            if diagnosticsFeed.isActive { emitFinished(callers: effects.resumes.count) }
            run(effects)
        }
        let task: Task<Void, Never>
        if start.isImmediate, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            task = Task.immediate(operation: body)
        } else {
            task = Task(operation: body)
        }
        run(transition { $0.attach(task, to: start.operation) })
    }

    /// A new stream that yields the current state, then every change; it unregisters when its consumer is
    /// cancelled or stops.
    @inlinable func makeStateStream(buffering: StateBuffering) -> AsyncStream<Machine.State> {
        let everyChange = !buffering.keepsOnlyNewest
        // `.latest` reads the object's own state when it changed, so the feed never holds one for it.
        var current: StateReader<Machine.State>.Current?
        if !everyChange {
            current = { [weak self] (read: (Machine.State) -> StateReader<Machine.State>.Step) in
                guard let self else { return nil }
                return storage.withLock { storage in read(storage.machine.state) }
            }
        }
        let reader = storage.withLock { storage in
            let feed = storage.feed ?? StateFeed()
            storage.feed = feed
            // Under the object's lock: the stream starts at the current state, and every later change follows it.
            return feed.register(startingAt: storage.machine.state, everyChange: everyChange, current: current)
        }
        Changes.raise()
        // Cancelling the consumer unregisters the reader at once; dropping the stream frees it, which does too.
        return AsyncStream(unfolding: { await reader.next() }, onCancel: { reader.cancel() })
    }

    /// The machine's whole state, for a test that needs to say why it is stuck.
    var describedMachine: String { storage.withLock { String(describing: $0.machine) } }

    /// How many streams are registered.
    var registeredObserverCount: Int { storage.withLock { $0.feed }?.readerCount ?? 0 }

    /// How many callers wait for operations in flight.
    @usableFromInline var machineWaitingCallerCount: Int { storage.withLock { $0.machine.waitingCallerCount } }

    /// Finishes every stream; called from `deinit`.
    func finishObservers() {
        let (feed, state) = storage.withLock { ($0.feed, $0.machine.state) }
        feed?.finish(at: state)
        Changes.raise()
    }
}
