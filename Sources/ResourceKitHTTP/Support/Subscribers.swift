/// The `AsyncStream`s of many observers of one object: a value kept in the object's locked state, so that
/// registering a stream, reading what it starts from and each change the object makes happen in the object's
/// own critical sections. The one ordering rule: a change is yielded to every stream under the lock that made
/// it, so each stream gets the object's changes in the order the object made them, from any thread.
///
/// A stream's end never takes the owner's lock. Its termination can run inside the Swift runtime's lock of the
/// reading task (a cancellation), and a yield under the owner's lock takes that same runtime lock to wake the
/// reader: a termination that waited for the owner's lock would wait for a yield that waits for it. So an
/// ended stream only records its end in a lock of its own (`departures`), and the owner's next change or
/// registration drops it; a change yielded to it meanwhile goes nowhere.
///
/// ``Locked/stream(_:buffering:first:)`` makes and registers a stream. Finishing the streams
/// (``removeAll()``) happens after the owner's lock, like every wake-up that need not keep the order.
package struct Subscribers<Element: Sendable>: Sendable {
    private var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    private var next: UInt64 = 0
    /// The keys of streams that ended since the owner last changed, recorded by their terminations.
    private let departures = Locked<[UInt64]>([])

    package init() {}

    /// Whether no stream is registered; a stream whose reader stopped counts until the next change.
    var isEmpty: Bool { continuations.isEmpty }

    /// Yields `element` to every stream; call it under the owner's lock. The element is made only when a stream
    /// is registered, so that an owner nobody watches builds nothing for a change.
    package mutating func yield(_ element: @autoclosure () -> Element) {
        dropDepartures()
        guard !continuations.isEmpty else { return }
        let element = element()
        for continuation in continuations.values { continuation.yield(element) }
    }

    /// Unregisters every stream and returns them, to finish after the owner's lock.
    package mutating func removeAll() -> [AsyncStream<Element>.Continuation] {
        defer {
            continuations = [:]
            departures.withLock { $0.removeAll() }
        }
        return Array(continuations.values)
    }

    /// Registers a stream; returns its key and where its termination records its end.
    fileprivate mutating func add(
        _ continuation: AsyncStream<Element>.Continuation
    ) -> (key: UInt64, departures: Locked<[UInt64]>) {
        dropDepartures()
        next &+= 1
        continuations[next] = continuation
        return (next, departures)
    }

    /// Unregisters the streams that ended since the last change.
    private mutating func dropDepartures() {
        let ended = departures.withLock { ended in
            defer { ended.removeAll() }
            return ended
        }
        for key in ended { continuations[key] = nil }
    }
}

extension Locked {
    /// A new stream of the ``Subscribers`` at `path` in the locked value: it first gets what `first` reads under
    /// the same lock, if anything, then every element yielded there. It is not registered when `first` says the
    /// stream is over already (its second value `true`): it ends after its first element. Cancelling the task
    /// that reads it, or dropping it, unregisters it at the owner's next change.
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
        let registered = withLock { value -> (key: UInt64, departures: Locked<[UInt64]>)? in
            let (element, ends) = first(value)
            if let element { continuation.yield(element) }
            return ends ? nil : value[keyPath: path].add(continuation)
        }
        guard let registered else {
            continuation.finish()
            return stream
        }
        // Never the owner's lock (see ``Subscribers``): the end is recorded, and dropped at the next change.
        continuation.onTermination = { _ in registered.departures.withLock { $0.append(registered.key) } }
        return stream
    }
}
