import Observation

/// State that holds an ``ObservedValue``: what a host's observers see.
protocol ObservedStorage {
    associatedtype State: Sendable
    var observed: ObservedValue<State> { get set }
}

/// An object whose state lives in a ``Locked`` storage and is published to `AsyncStream` observers and to
/// Observation. ``Resource`` and ``ListResource`` share this one implementation.
protocol ObservableHost: AnyObject, Sendable, Observable {
    associatedtype Storage: ObservedStorage
    var storage: Locked<Storage> { get }
    var registrar: ObservationRegistrar { get }
    /// Made once per object: forming a key path on a generic class instantiates it at run time, which cost
    /// more than the rest of a read on an instant transport.
    var stateKeyPath: any KeyPath<Self, Storage.State> & Sendable { get }
}

extension ObservableHost {
    /// The current state, registered with Observation.
    var observedState: Storage.State {
        registrar.access(self, keyPath: stateKeyPath)
        return storage.withLock { $0.observed.value }
    }

    /// Runs `body` under the lock, then tells Observation if the observed state changed. Observers of the
    /// streams were already given each change, in order, under the lock.
    func withStorage<R>(_ body: (inout Storage) -> R) -> R {
        let (result, changed) = storage.withLock { storage in
            let version = storage.observed.version
            let result = body(&storage)
            return (result, storage.observed.version != version)
        }
        if changed { registrar.withMutation(of: self, keyPath: stateKeyPath) {} }
        return result
    }

    /// A new stream that yields the current state, then every change; it unregisters when its consumer is
    /// cancelled.
    func makeStateStream() -> AsyncStream<Storage.State> {
        let (stream, continuation) = AsyncStream.makeStream(of: Storage.State.self)
        let id = storage.withLock { $0.observed.add(continuation) }
        continuation.onTermination = { [weak self] _ in
            self?.storage.withLock { $0.observed.remove(id) }
        }
        return stream
    }

    /// How many streams are registered.
    var registeredObserverCount: Int { storage.withLock { $0.observed.observerCount } }

    /// Finishes every stream; called from `deinit`.
    func finishObservers() {
        let observers = storage.withLock { $0.observed.removeAll() }
        for observer in observers { observer.finish() }
    }
}
