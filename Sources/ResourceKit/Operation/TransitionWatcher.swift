/// What a feature hears of an object's transitions, besides the object's own streams (which the host feeds)
/// and the store (``MachineHost/forward(_:)``): the extension point through which request events watch
/// resources and lists, so that the host and its machine hold nothing of them.
///
/// A transition asks ``isActive`` once, before the object's lock. When the watcher listens, it readies what it
/// needs (``prepare()``), still before the lock, then notes the state before the event (``mark(_:)``) and is
/// told of a change (``changed(from:to:)``) in the same critical section, so it records the object's changes in
/// their order; that part runs no code of anyone else's. What may (a logger) it returns,
/// and the host hands it over after the lock (``handOff(_:)``). What a caller's ask did and what an operation
/// answered come after the lock too.
@usableFromInline protocol TransitionWatcher: Sendable {
    associatedtype Machine: OperationMachine
    /// What the watcher notes of a state before an event.
    associatedtype Mark
    /// What it hands on after the lock.
    associatedtype Handoff

    /// Whether it listens now; when it does not, a transition asks nothing else of it.
    var isActive: Bool { get }
    /// Before the object's lock, when it listens: makes what ``changed(from:to:)`` needs and must not make under
    /// the lock, such as a name made by an app's `description`.
    func prepare()
    /// Under the object's lock, before an event.
    /// - Parameter state: The state before the event.
    /// - Returns: What to compare the state after it with.
    func mark(_ state: Machine.State) -> Mark
    /// Under the object's lock, after an event that changed the state.
    /// - Parameters:
    ///   - mark: What ``mark(_:)`` noted before the event.
    ///   - state: The new state.
    /// - Returns: What to hand on after the lock, if anything.
    func changed(from mark: Mark, to state: Machine.State) -> Handoff?
    /// After the lock: what ``changed(from:to:)`` returned.
    func handOff(_ handoff: Handoff)
    /// After the lock: what a caller's ask did (answered it, joined an operation, started one), and how many
    /// callers waited right after it, counted in its critical section (a caller asking just after it must not
    /// be counted in).
    func asked(_ effects: Machine.Effects, waitingCallers: Int)
    /// After the lock: an operation's work returned, and its outcome answered `callers` callers.
    func finished(answering callers: Int)
}
