/// The `AsyncStream`s of many observers of one object: a value kept in the object's locked state, so that
/// registering a stream, reading what it starts from and each change the object makes happen in the object's
/// own critical sections. The one ordering rule: a change is yielded to every stream under the lock that made
/// it, so each stream gets the object's changes in the order the object made them, from any thread.
///
/// ``Locked/stream(_:buffering:first:)`` makes and registers a stream, which unregisters itself when its reader
/// stops. Finishing the streams (``removeAll()``) happens after the lock: finishing runs each stream's
/// termination, which takes the lock to unregister it.
package struct Subscribers<Element: Sendable>: Sendable {
    private var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    private var next: UInt64 = 0

    package init() {}

    /// Whether no stream is registered.
    package var isEmpty: Bool { continuations.isEmpty }

    /// Yields `element` to every stream; call it under the owner's lock.
    package func yield(_ element: Element) {
        for continuation in continuations.values { continuation.yield(element) }
    }

    /// Unregisters every stream and returns them, to finish after the owner's lock.
    package mutating func removeAll() -> [AsyncStream<Element>.Continuation] {
        defer { continuations = [:] }
        return Array(continuations.values)
    }

    fileprivate mutating func add(_ continuation: AsyncStream<Element>.Continuation) -> UInt64 {
        next &+= 1
        continuations[next] = continuation
        return next
    }

    fileprivate mutating func remove(_ key: UInt64) { continuations[key] = nil }
}

extension Locked {
    /// A new stream of the ``Subscribers`` at `path` in the locked value: it first gets what `first` reads under
    /// the same lock, if anything, then every element yielded there. It is not registered when `first` says the
    /// stream is over already (its second value `true`): it ends after its first element. Cancelling the task
    /// that reads it unregisters it.
    /// - Parameters:
    ///   - path: Where the subscribers are.
    ///   - buffering: How the stream buffers what its reader has not read.
    ///   - first: What the stream starts with, read under the lock, and whether the stream ends after it.
    package func stream<Element: Sendable>(
        _ path: any WritableKeyPath<Value, Subscribers<Element>> & Sendable,
        buffering: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded,
        first: (Value) -> (element: Element?, ends: Bool) = { _ in (nil, false) }
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        let key = withLock { value -> UInt64? in
            let (element, ends) = first(value)
            if let element { continuation.yield(element) }
            return ends ? nil : value[keyPath: path].add(continuation)
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.withLock { $0[keyPath: path].remove(key) } }
        return stream
    }
}
