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
    /// Who else hears of the object's transitions: the session's request events (``ObjectEvents``).
    associatedtype Watcher: TransitionWatcher where Watcher.Machine == Machine
    var storage: Locked<HostStorage<Machine>> { get }
    var registrar: ObservationRegistrar { get }
    /// The key paths it names to Observation; formed once per type, since forming a key path on a generic
    /// class instantiates it at run time.
    var keyPaths: HostKeyPaths<Self, Machine.State> { get }
    /// Tells the store what the machine learnt about items; called outside the lock.
    func forward(_ news: Machine.News)
    /// The object's watcher; cheap to make, asked for once per transition.
    var watcher: Watcher { get }
    /// The time an answer that lands is dated with, on the session's timeline; `nil` for an object whose
    /// answers are not dated. Read under the lock, by the transition that lands the answer.
    var answerTime: Duration? { get }
}

/// What a host names to Observation: its state, its waiting callers and its `states` streams.
@usableFromInline final class HostKeyPaths<Root, State>: Sendable {
    @usableFromInline let state: any KeyPath<Root, State> & Sendable
    @usableFromInline let callers: any KeyPath<Root, Int> & Sendable
    @usableFromInline let observers: any KeyPath<Root, Int> & Sendable

    @inlinable init(
        state: any KeyPath<Root, State> & Sendable, callers: any KeyPath<Root, Int> & Sendable,
        observers: any KeyPath<Root, Int> & Sendable
    ) {
        self.state = state
        self.callers = callers
        self.observers = observers
    }
}

extension MachineHost {
    @usableFromInline typealias Effects = Machine.Effects

    /// The current state, registered with Observation.
    var observedState: Machine.State {
        registrar.access(self, keyPath: keyPaths.state)
        return storage.withLock { $0.machine.state }
    }

    /// Applies one event to the machine, with the process's ranks; then tells Observation and delivers the
    /// change, outside the lock.
    @inlinable func transition<R>(_ event: (inout Machine, inout Ranks) -> R) -> R {
        let watcher = self.watcher
        // Asked before the lock, so that a watcher that listens makes what it names the object with there: a
        // list's name runs its request's `description`, the app's code, which may read the list.
        let watching = watcher.isActive
        if watching { watcher.prepare() }
        // What the watcher hands on after the lock (a logger's copy of a state change: a logger may read this
        // object, and under its lock it would wait for itself).
        var handoff: Watcher.Handoff?
        let (result, changed, callersChanged, woken, news) = storage.withLock {
            storage -> (R, Bool, Bool, [StateReader<Machine.State>], Machine.News?) in
            let version = storage.machine.version
            let callers = storage.machine.waitingCallerCount
            // What the watcher compares the new state with (a few bytes), when it listens.
            let mark = watching ? watcher.mark(storage.machine.state) : nil
            var ranks = Ranks.process
            let result = event(&storage.machine, &ranks)
            let news = storage.machine.takeNews()
            let callersChanged = storage.machine.waitingCallerCount != callers
            guard storage.machine.version != version else { return (result, false, callersChanged, [], news) }
            // Under the lock, so the watcher records the object's transitions in their order.
            if let mark { handoff = watcher.changed(from: mark, to: storage.machine.state) }
            guard let feed = storage.feed else { return (result, true, callersChanged, [], news) }
            return (result, true, callersChanged, feed.publish(storage.machine.state), news)
        }
        if let handoff { watcher.handOff(handoff) }
        // Told after the change, outside the lock: an observer that reads the object at once sees it.
        if changed { registrar.withMutation(of: self, keyPath: keyPaths.state) {} }
        if callersChanged { registrar.withMutation(of: self, keyPath: keyPaths.callers) {} }
        if let feed = woken.first?.feed { feed.wake(woken) }
        // The store hears of it after this object's own observers, and before the caller goes on.
        if let news { forward(news) }
        return result
    }

    /// Asks for an operation and waits for its answer.
    ///
    /// `ask` runs in the same critical section that registers the caller: it decides whether to answer at
    /// once, join an operation in flight, or start one. A caller cancelled at any point gets `.cancelled`.
    @inlinable func perform(
        _ ask: (inout Machine, CallID, OperationWaiter<Machine.Outcome>, inout Ranks) -> Effects
    ) async -> Result<Machine.Outcome, NetworkError> {
        let call = CallID.next()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: OperationWaiter<Machine.Outcome>) in
                var waitingCallers = 0
                let effects = transition { machine, ranks -> Effects in
                    // The cancellation flag is set before a handler runs; checked under the lock, it closes the
                    // window between drawing the id and registering.
                    guard !Task.isCancelled else {
                        var effects = Effects.none
                        effects.resume(waiter, with: .failure(.cancelled))
                        return effects
                    }
                    let effects = ask(&machine, call, waiter, &ranks)
                    waitingCallers = machine.waitingCallerCount
                    return effects
                }
                let watcher = self.watcher
                if watcher.isActive { watcher.asked(effects, waitingCallers: waitingCallers) }
                run(effects)
            }
        } onCancel: {
            run(transition { machine, _ in machine.cancel(call) })
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
                let (shouldRun, effects) = transition { $0.begin(start.operation, ranks: &$1) }
                run(effects)
                guard shouldRun else { return }
            }
            let result = await start.work(start.context)
            let effects = transition { $0.finish(start.operation, with: result, ranks: &$1, now: answerTime) }
            let watcher = self.watcher
            if watcher.isActive { watcher.finished(answering: effects.resumes.count) }
            run(effects)
        }
        let task: Task<Void, Never>
        if start.isImmediate, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            task = Task.immediate(operation: body)
        } else {
            task = Task(operation: body)
        }
        run(transition { machine, _ in machine.attach(task, to: start.operation) })
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
            let feed = storage.feed ?? StateFeed(readersChanged: { [weak self] in self?.observersChanged() })
            storage.feed = feed
            // Under the object's lock: the stream starts at the current state, and every later change follows it.
            return feed.register(startingAt: storage.machine.state, everyChange: everyChange, current: current)
        }
        observersChanged()
        // Cancelling the consumer unregisters the reader at once; dropping the stream frees it, which does too.
        return AsyncStream(unfolding: { await reader.next() }, onCancel: { reader.cancel() })
    }

    /// The machine's whole state, for a test that needs to say why it is stuck.
    var describedMachine: String { storage.withLock { String(describing: $0.machine) } }

    /// How many streams are registered, registered with Observation.
    var registeredObserverCount: Int {
        registrar.access(self, keyPath: keyPaths.observers)
        return storage.withLock { $0.feed }?.readerCount ?? 0
    }

    /// A stream registered or unregistered: tells Observation, after the change.
    @usableFromInline func observersChanged() { registrar.withMutation(of: self, keyPath: keyPaths.observers) {} }

    /// How many callers wait for operations in flight, registered with Observation.
    var machineWaitingCallerCount: Int {
        registrar.access(self, keyPath: keyPaths.callers)
        return storage.withLock { $0.machine.waitingCallerCount }
    }

    /// Finishes every stream; called from `deinit`, so it tells Observation nothing: nobody can read the
    /// object any more.
    func finishObservers() {
        let (feed, state) = storage.withLock { ($0.feed, $0.machine.state) }
        feed?.finish(at: state)
    }
}
