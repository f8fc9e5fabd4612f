public import Observation

/// One remote value, its state, and the operations that change it.
///
/// A resource is `Sendable` and usable from any actor or thread. Read ``state`` synchronously, observe it
/// with ``states`` (an `AsyncStream` per observer) or with Observation (SwiftUI, `withObservationTracking`),
/// and change it with ``read(_:policy:)``, ``create(_:)``, ``update(_:)`` and ``delete(_:)``.
///
/// Concurrency contract:
/// - identical concurrent reads share one request;
/// - a response never overwrites the state produced by a newer operation;
/// - creates, updates and deletes run one after another, in call order;
/// - cancelling a caller returns ``NetworkError/cancelled`` to it at once; when no other caller waits for the
///   same request, the HTTP request is cancelled and the state returns to what it was before.
///
/// A resource made by a ``ResourceStore`` also shows what every other holder of its item learns, under the
/// same order rule (see <doc:OneSourceOfTruth>).
public final class Resource<Remote: RemoteResource>: Sendable, Observable {
    /// The value type.
    public typealias Value = Remote.Value

    /// The session that sends this resource's requests.
    public let session: NetworkSession

    // `@usableFromInline`: the inlinable read path (Resource+CRUD.swift) reaches them, so they are part of the
    // module's API surface.
    @usableFromInline let storage: Locked<HostStorage<ResourceMachine<Value>>>
    @usableFromInline let registrar = ObservationRegistrar()
    /// Formed once per type (see `observedKeyPaths(of:_:)`).
    @usableFromInline let keyPaths: HostKeyPaths<Resource, ResourceState<Value>>
    /// The store this resource belongs to, if a store made it.
    @usableFromInline let link: ResourceLink<Remote>?
    /// Made by the first diagnostic event about the object.
    @usableFromInline let diagnosticSubjectSlot = DiagnosticSubjectSlot()

    /// Creates a resource.
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - state: The initial state; `.idle` by default. Any state works, so tests and previews can start
    ///     from `.available(value)` or `.failure(…)` with no network.
    // `@inlinable`, so that making a resource specializes in the client: unspecialized, the machine's
    // metadata lookups took a quarter of an init (its key path, most of the rest, is formed once per type).
    @inlinable
    public init(session: NetworkSession, state: ResourceState<Value> = .idle) {
        self.session = session
        self.storage = Locked(HostStorage(ResourceMachine(state: state)))
        self.link = nil
        keyPaths = observedKeyPaths(of: Resource.self) {
            HostKeyPaths(state: \.state, callers: \.waitingCallerCount, observers: \.observerCount)
        }
    }

    init(session: NetworkSession, machine: ResourceMachine<Value>, link: ResourceLink<Remote>) {
        self.session = session
        self.storage = Locked(HostStorage(machine))
        keyPaths = observedKeyPaths(of: Resource.self) {
            HostKeyPaths(state: \.state, callers: \.waitingCallerCount, observers: \.observerCount)
        }
        self.link = link
    }

    /// Creates a resource in a fixed state with no network, for previews: every operation fails with
    /// ``NetworkError/transport(code:message:)`` (`notConnectedToInternet`).
    /// - Parameter state: The state.
    public convenience init(state: ResourceState<Value>) {
        self.init(session: .offline, state: state)
    }

    deinit {
        finishObservers()
        if let link {
            // A failure's kept value is remembered too, stale: the read that failed said nothing of its age.
            let snapshot = storage.withLock { storage in
                storage.machine.snapshot()
                    ?? storage.machine.persistedSnapshot().map { kept in
                        var stale = kept
                        stale.loadedAt = nil
                        return stale
                    }
            }
            link.release(ObjectIdentifier(self), snapshot)
        }
    }

    /// The current state.
    public var state: ResourceState<Value> {
        observedState
    }

    /// The latest known value; shorthand for `state.value`.
    public var value: Value? { state.value }

    /// A new stream of every state: first the current state, then every change in order.
    ///
    /// Each access returns an independent stream, so any number of observers can watch. Cancelling the task
    /// that iterates a stream unregisters it; streams finish when the resource is deallocated. The stream
    /// buffers every change its consumer has not read yet (``StateBuffering/everyChange``); a screen that only
    /// draws the newest state can use ``states(buffering:)`` with ``StateBuffering/latest``.
    @inlinable public var states: AsyncStream<ResourceState<Value>> { makeStateStream(buffering: .everyChange) }

    /// A new stream of states with the given buffering: first the current state, then the changes.
    /// - Parameter buffering: Whether an unread stream keeps every change or only the newest state.
    /// - Returns: The stream.
    @inlinable public func states(buffering: StateBuffering) -> AsyncStream<ResourceState<Value>> {
        makeStateStream(buffering: buffering)
    }

    /// How many `states` streams are registered. Observation tracks it, as it does the state: a view or a
    /// test can wait for a stream to register or go away.
    public var observerCount: Int { registeredObserverCount }

    /// Whether the value shown came from the store's persistence (`StorePersistence`) when the resource was
    /// made, and no answer or news has come since: a failed read ends it too, though its failure keeps showing
    /// the restored value (`failure(_, previous:)`), and an optimistic change shown over it does not.
    public var isRestored: Bool {
        guard let rank = link?.restoredRank else { return false }
        return storage.withLock { $0.machine.settledRank == rank && $0.machine.state.value != nil }
    }

    /// How long ago the value shown was loaded, on the session's clock: by a read, a create or update, another
    /// holder in the store, or (for a value restored from persistence) in an earlier run, whose age at the
    /// restart is measured on the wall clock and carried onto the session's clock from there; `nil` when no
    /// loaded value is shown or it was marked stale.
    public var age: Duration? {
        let now = session.now
        // An optimistic delete shows no value: it has no age.
        return storage.withLock { $0.machine.state.value == nil ? nil : $0.machine.loadedAt }.map {
            max(.zero, now - $0)
        }
    }

    /// How many callers are waiting for operations in flight, shared reads counted once per caller.
    /// Observation tracks it, as it does the state: a test can wait for callers to join.
    public var waitingCallerCount: Int { machineWaitingCallerCount }

    /// The state machine's whole state, for the package's tests to say why a schedule is stuck.
    var machineDescription: String { describedMachine }
}

extension Resource: MachineHost {
    @inlinable func forward(_ news: [ResourceNews<Value>]) {
        guard let link else { return }
        link.publish(self, news)
        link.reportChange(of: self, in: news)
    }

    @inlinable var watcher: ObjectEvents<Resource, ResourceMachine<Value>> { ObjectEvents(self) }

    @inlinable var answerTime: Duration? { session.now }
}

extension Resource: EventSubject {
    @inlinable var diagnosticsFeed: DiagnosticsFeed { session.feed }

    @inlinable var diagnosticSubject: DiagnosticSubject {
        diagnosticSubjectSlot.subject { .object(diagnosticLabel) }
    }

    @usableFromInline var diagnosticLabel: String {
        let name = TypeNames.name(of: Remote.self, as: .resource)
        guard let key = link?.readKey else { return name }
        return name + " " + key.path
    }

    @inlinable static func diagnosticState(_ state: ResourceState<Value>) -> DiagnosticState {
        DiagnosticState.of(state)
    }
}

/// When ``Resource/read(_:policy:)`` may answer without the network.
///
/// A value is *fresh* for ``Readable/maxAge`` (or the policy's `maxAge`) after it was loaded: by a read of
/// the same request, or, in a ``ResourceStore``, by a create or update or any holder of the same item. A
/// resource made on its own reads again after its create or update, whose answer is no read of a request. A
/// resource a store makes from another holder's copy starts stale, unless that copy is a list's whose type
/// declares ``Listable/itemsAreComplete``.
/// ``ResourceStore/invalidate(_:)`` makes it stale at once.
///
/// A policy is a struct with static members, so that a later release can add policies without breaking
/// your code; compare policies with `==`.
public struct ReadPolicy: Sendable, Equatable, CustomStringConvertible {
    @usableFromInline enum Kind: Sendable, Equatable {
        case always, skipIfLoaded, skipIfFresh, staleWhileRevalidate
    }

    @usableFromInline let kind: Kind
    /// The freshness window the policy checks, when it set one: `nil` means the type's
    /// ``Readable/maxAge`` (and, for ``always`` and ``skipIfLoaded``, that no window applies).
    public let maxAge: Duration?

    @inlinable init(kind: Kind, maxAge: Duration? = nil) {
        self.kind = kind
        self.maxAge = maxAge
    }

    /// Always send the request.
    @inlinable public static var always: ReadPolicy { ReadPolicy(kind: .always) }
    /// Return the current value without a request when it is `.available` and was loaded by the same
    /// request (same endpoint). A read of another id always goes to the network.
    @inlinable public static var skipIfLoaded: ReadPolicy { ReadPolicy(kind: .skipIfLoaded) }

    /// Return the current value without a request while it is fresh: loaded by the same request less than
    /// `maxAge` ago (``Readable/maxAge`` when `nil`), and not invalidated since. Otherwise read.
    /// - Parameter maxAge: How long a value stays fresh; `nil` for the type's ``Readable/maxAge``.
    public static func skipIfFresh(maxAge: Duration?) -> ReadPolicy { ReadPolicy(kind: .skipIfFresh, maxAge: maxAge) }

    /// Return a fresh value as ``skipIfFresh(maxAge:)`` does; return a stale one at once too, and read again
    /// in the background, the state showing `loading(previous:)` until the new value lands. With no value,
    /// read and wait.
    /// - Parameter maxAge: How long a value stays fresh; `nil` for the type's ``Readable/maxAge``.
    public static func staleWhileRevalidate(maxAge: Duration?) -> ReadPolicy {
        ReadPolicy(kind: .staleWhileRevalidate, maxAge: maxAge)
    }

    /// ``skipIfFresh(maxAge:)`` with the type's ``Readable/maxAge``.
    public static var skipIfFresh: ReadPolicy { .skipIfFresh(maxAge: nil) }
    /// ``staleWhileRevalidate(maxAge:)`` with the type's ``Readable/maxAge``.
    public static var staleWhileRevalidate: ReadPolicy { .staleWhileRevalidate(maxAge: nil) }

    /// The policy as written in code, as in `skipIfFresh(maxAge: 60.0 seconds)`.
    public var description: String {
        let name = "\(kind)"
        return maxAge.map { "\(name)(maxAge: \($0))" } ?? name
    }
}
