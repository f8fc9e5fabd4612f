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
public final class Resource<Remote: RemoteResource>: Sendable, Observable {
    /// The value type.
    public typealias Value = Remote.Value

    /// The session that sends this resource's requests.
    public let session: NetworkSession

    let storage: Locked<Storage>
    let registrar = ObservationRegistrar()
    let stateKeyPath: any KeyPath<Resource, ResourceState<Value>> & Sendable = \.state

    /// Creates a resource.
    /// - Parameters:
    ///   - session: The session that sends the requests.
    ///   - state: The initial state; `.idle` by default. Any state works, so tests and previews can start
    ///     from `.available(value)` or `.failure(…)` with no network.
    public init(session: NetworkSession, state: ResourceState<Value> = .idle) {
        self.session = session
        let settled: ResourceState<Value> =
            if case .loading(let previous) = state { previous.map { .available($0) } ?? .idle } else { state }
        self.storage = Locked(Storage(observed: ObservedValue(state), settled: settled))
    }

    /// Creates a resource in a fixed state with no network, for previews: every operation fails with
    /// ``NetworkError/transport(code:message:)`` (`notConnectedToInternet`).
    /// - Parameter state: The state.
    public convenience init(state: ResourceState<Value>) {
        self.init(session: .offline, state: state)
    }

    deinit {
        finishObservers()
    }

    /// The current state.
    public var state: ResourceState<Value> {
        observedState
    }

    /// The latest known value; shorthand for `state.value`.
    public var value: Value? { state.value }

    /// A new stream of states: first the current state, then every change in order.
    ///
    /// Each access returns an independent stream, so any number of observers can watch. Cancelling the task
    /// that iterates a stream unregisters it; streams finish when the resource is deallocated.
    public var states: AsyncStream<ResourceState<Value>> { makeStateStream() }

    /// How many `states` streams are registered.
    public var observerCount: Int { registeredObserverCount }

    /// How many callers are waiting for operations in flight, shared reads counted once per caller.
    public var waitingCallerCount: Int {
        storage.withLock { storage in storage.operations.entries.values.reduce(0) { $0 + $1.waiters.count } }
    }

    /// What an operation did to the value.
    enum Outcome: Sendable {
        case value(Value)
        case removed
    }

    struct Storage: OperationStorage, ObservedStorage {
        var observed: ObservedValue<ResourceState<Value>>
        /// The last state that is not `.loading`: restored when an operation is cancelled.
        var settled: ResourceState<Value>
        /// The read that produced the current value, for ``ReadPolicy/skipIfLoaded``.
        var loadedReadKey: String?
        var operations = OperationTable<Outcome, Void>()

        mutating func settle(_ state: ResourceState<Value>) {
            settled = state
            observed.set(state)
        }
    }
}

extension Resource: ObservableHost, OperationHost {
    static func begin(_ entry: inout Entry, in storage: inout Storage) -> Bool {
        entry.generation = storage.operations.nextGeneration()
        if !storage.observed.value.isLoading {
            storage.observed.set(.loading(previous: storage.settled.value))
        }
        return true
    }

    static func join(_ entry: inout Entry, in storage: inout Storage) {
        // The newest caller asked for this result, so it must not be overwritten by older operations.
        if entry.generation != nil { entry.generation = storage.operations.nextGeneration() }
    }

    static func finish(_ entry: Entry, with result: Result<Outcome, NetworkError>, in storage: inout Storage) {
        guard let generation = entry.generation, generation == storage.operations.generation else { return }
        switch result {
        case .success(.value(let value)):
            storage.loadedReadKey = entry.sharingKey
            storage.settle(.available(value))
        case .success(.removed):
            storage.loadedReadKey = nil
            storage.settle(.idle)
        case .failure(.cancelled):
            // An older operation still in flight becomes the newest; with none left, undo the loading state.
            if let older = storage.operations.newestGenerationInFlight() {
                storage.operations.generation = older
            } else {
                storage.observed.set(storage.settled)
            }
        case .failure(let error):
            storage.settle(.failure(error, previous: storage.settled.value))
        }
    }
}

/// When ``Resource/read(_:policy:)`` may answer without the network.
public enum ReadPolicy: Sendable, Equatable {
    /// Always send the request.
    case always
    /// Return the current value without a request when it is `.available` and was loaded by the same
    /// request (same endpoint). A read of another id always goes to the network.
    case skipIfLoaded
}
