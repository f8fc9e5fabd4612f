/// A value and the streams that observe it, kept behind its owner's lock.
///
/// Changes are yielded while the owner's lock is held. `AsyncStream.Continuation.yield` only enqueues,
/// so no observer code runs under the lock, and two racing changes can never reach an observer out of order.
struct ObservedValue<Value: Sendable> {
    private(set) var value: Value
    private(set) var version: UInt64 = 0
    private var observers: [UInt64: AsyncStream<Value>.Continuation] = [:]
    private var nextObserverID: UInt64 = 0

    init(_ value: Value) { self.value = value }

    var observerCount: Int { observers.count }

    mutating func set(_ newValue: Value) {
        value = newValue
        version &+= 1
        for observer in observers.values { observer.yield(newValue) }
    }

    /// Changes the value in place, so a large value uniquely held here (a list's items) is not copied,
    /// then yields it like ``set(_:)``.
    mutating func modify(_ body: (inout Value) -> Void) {
        body(&value)
        version &+= 1
        for observer in observers.values { observer.yield(value) }
    }

    /// Registers an observer and yields the current value to it first.
    mutating func add(_ continuation: AsyncStream<Value>.Continuation) -> UInt64 {
        nextObserverID &+= 1
        observers[nextObserverID] = continuation
        continuation.yield(value)
        return nextObserverID
    }

    mutating func remove(_ id: UInt64) {
        observers.removeValue(forKey: id)
    }

    mutating func removeAll() -> [AsyncStream<Value>.Continuation] {
        defer { observers.removeAll() }
        return Array(observers.values)
    }
}
