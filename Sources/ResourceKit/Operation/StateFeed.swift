/// Where an object's `states` streams read its changes: one log shared by every stream, instead of a buffer and
/// a yield per stream.
///
/// A change is published once, under the object's lock: it becomes the feed's newest state and, while a
/// `.everyChange` stream is registered, a node at the end of the log. Each `.everyChange` stream holds the node it
/// read last and walks the log at its own pace; a node lets go of its state once every stream has read it, and is
/// freed once none holds it. A `.latest` stream holds no node and no state: when the feed's version moved, it reads
/// the object's own state, under the object's lock, so an object changing its state in place never copies it for
/// an unread stream. A stream with nothing to read parks its continuation in the feed; a change hands each parked stream its
/// next state under one lock and resumes them after it, so delivering to many streams costs a resumption each,
/// and reading a state costs its stream one lock.
@usableFromInline final class StateFeed<State: Sendable>: Sendable {
    @usableFromInline struct Contents {
        /// The object's last state, once it is gone: what a `.latest` stream that had not read it reads then.
        @usableFromInline var finalState: State?
        /// Moves with every change published while a stream is registered.
        @usableFromInline var version: UInt64 = 0
        /// The newest node of the log; kept only while a `.everyChange` stream is registered.
        @usableFromInline var tail: StateLogNode<State>?
        /// Streams parked until the next change.
        @usableFromInline var waiters: [StateReader<State>] = []
        /// An emptied waiter list, kept for its capacity: the next change's waiters go there.
        @usableFromInline var spare: [StateReader<State>] = []
        @usableFromInline var readers = 0
        @usableFromInline var logReaders = 0
        /// The object is gone: streams end once they have read what they have not yet.
        @usableFromInline var isFinished = false

        @inlinable init() {}
    }

    @usableFromInline let contents = Locked(Contents())
    /// Called after a stream unregisters, outside the lock: the object tells Observation its `observerCount`.
    @usableFromInline let readersChanged: @Sendable () -> Void

    @inlinable init(readersChanged: @escaping @Sendable () -> Void) { self.readersChanged = readersChanged }

    /// Registers a stream that starts at `state`, the object's current state; called under the object's lock,
    /// so no change comes between the two.
    @usableFromInline func register(
        startingAt state: State, everyChange: Bool, current: StateReader<State>.Current?
    ) -> StateReader<State> {
        contents.withLock { contents in
            contents.readers += 1
            guard everyChange else {
                // `.latest` reads the object's state when the version moved: one behind, it reads it first.
                return StateReader(
                    feed: self, first: nil, anchor: nil, version: contents.version &- 1, current: current)
            }
            // The anchor's state is never read: the stream starts with `first`.
            if contents.tail == nil { contents.tail = StateLogNode(nil, unread: 0) }
            contents.logReaders += 1
            return StateReader(feed: self, first: state, anchor: contents.tail, version: contents.version)
        }
    }

    /// Publishes a change; called under the object's lock, so the log holds changes in the order they happened.
    /// - Returns: The streams that were parked, to wake once the object's lock is released (``wake(_:)``).
    @inlinable func publish(_ state: State) -> [StateReader<State>] {
        contents.withLock { contents in
            guard contents.readers > 0 else { return [] }
            contents.version &+= 1
            if let tail = contents.tail {
                let node = StateLogNode(state, unread: contents.logReaders)
                tail.next = node
                contents.tail = node
            }
            guard !contents.waiters.isEmpty else { return [] }
            let waiting = contents.waiters
            contents.waiters = contents.spare
            contents.spare = []
            return waiting
        }
    }

    /// Wakes the streams ``publish(_:)`` returned: an `.everyChange` stream with its next state, taken for it under
    /// the feed's lock, a `.latest` one to read the object's state itself (a stream a cancellation woke already is
    /// skipped); resumes them after the lock.
    @usableFromInline func wake(_ waiting: [StateReader<State>]) {
        var waiting = waiting
        var resumptions: [(UnsafeContinuation<StateReader<State>.Step, Never>, StateReader<State>.Step)] = []
        resumptions.reserveCapacity(waiting.count)
        contents.withLock { contents in
            for reader in waiting {
                guard let continuation = reader.continuation.take() else { continue }
                reader.index = -1
                guard reader.readsLog else {
                    resumptions.append((continuation, .wait))
                    continue
                }
                switch reader.take(&contents, current: nil) {
                case .wait: reader.park(continuation, in: &contents)
                case let step: resumptions.append((continuation, step))
                }
            }
        }
        for (continuation, step) in resumptions { continuation.resume(returning: step) }
        // Emptied outside the lock: a stream cancelled meanwhile may be freed here, and it unregisters under it.
        waiting.removeAll(keepingCapacity: true)
        contents.withLock { contents in
            if contents.spare.capacity < waiting.capacity { swap(&contents.spare, &waiting) }
        }
    }

    /// The object is gone, its last state `state`: parked streams wake to read what is left, then end.
    func finish(at state: State) {
        let waiting = contents.withLock { contents -> [StateReader<State>] in
            contents.isFinished = true
            if contents.readers > contents.logReaders { contents.finalState = state }
            defer { contents.waiters = [] }
            return contents.waiters
        }
        wake(waiting)
    }

    /// How many streams are registered.
    var readerCount: Int { contents.withLock { $0.readers } }

    /// A stream is gone: the states it had not read no longer wait for it.
    func unregister(_ reader: StateReader<State>) {
        let unregistered = contents.withLock { contents in contents.unregister(reader) }
        if unregistered { readersChanged() }
    }
}

extension StateFeed.Contents {
    /// A stream was cancelled or is gone, once: the states it had not read no longer wait for it.
    /// - Returns: Whether it was registered until now.
    @usableFromInline @discardableResult mutating func unregister(_ reader: StateReader<State>) -> Bool {
        guard !reader.isUnregistered else { return false }
        reader.isUnregistered = true
        readers -= 1
        if reader.readsLog {
            logReaders -= 1
            var node = reader.node?.next
            while let unread = node {
                unread.read()
                node = unread.next
            }
            reader.node = nil
            if logReaders == 0 { tail = nil }
        }
        reader.first = nil
        return true
    }
}

/// A change in a feed's log. A node holds its state until every stream has read it, and lives while a stream holds
/// it or one before it.
@usableFromInline final class StateLogNode<State: Sendable>: @unchecked Sendable {
    // Safe to share: every field is read and written under the feed's lock, or by the node's last holder.
    @usableFromInline var state: State?
    @usableFromInline var unread: Int
    @usableFromInline var next: StateLogNode<State>?

    @inlinable init(_ state: State?, unread: Int) {
        self.state = state
        self.unread = unread
    }

    /// A stream read the node, or will never read it.
    @inlinable func read() {
        unread -= 1
        if unread <= 0 { state = nil }
    }

    // A stream that stops reading may hold the head of a long log: freed one node at a time, not by a recursion as
    // deep as the log.
    deinit {
        guard var node = next else { return }
        next = nil
        while isKnownUniquelyReferenced(&node) {
            guard let following = node.next else { return }
            node.next = nil
            node = following
        }
    }
}

/// One `states` stream's place in its feed.
@usableFromInline final class StateReader<State: Sendable>: @unchecked Sendable {
    // Safe to share: every field but `feed` and `readsLog` is read and written under the feed's lock.
    @usableFromInline let feed: StateFeed<State>
    @usableFromInline let readsLog: Bool
    /// The state the stream starts with, until it is read (`.everyChange`).
    @usableFromInline var first: State?
    /// `.everyChange`: the node read last.
    @usableFromInline var node: StateLogNode<State>?
    /// `.latest`: the feed's version when the stream last read.
    @usableFromInline var version: UInt64
    /// The parked `next()`.
    @usableFromInline var continuation: UnsafeContinuation<Step, Never>?
    /// `.latest`: runs a read of the feed with the object's state, under the object's lock; `nil` once the object
    /// is gone.
    @usableFromInline let current: Current?
    /// Where the parked `next()` sits in the feed's waiters, while it is there.
    @usableFromInline var index = -1
    /// Cancelled: the stream ends, and no longer counts as registered.
    @usableFromInline var isUnregistered = false

    @usableFromInline typealias Current = @Sendable ((State) -> Step) -> Step?

    @usableFromInline init(
        feed: StateFeed<State>, first: State?, anchor: StateLogNode<State>?, version: UInt64, current: Current? = nil
    ) {
        self.feed = feed
        self.current = current
        self.readsLog = anchor != nil
        self.first = first
        self.node = anchor
        self.version = version
    }

    deinit { feed.unregister(self) }

    @usableFromInline enum Step: Sendable {
        case state(State)
        case end
        case wait
    }

    /// The next state: at once if one waits, else when the next change is published; `nil` once the stream was
    /// cancelled, or its object is gone and every change was read.
    @inlinable func next() async -> State? {
        while true {
            let step = await withUnsafeContinuation { (continuation: UnsafeContinuation<Step, Never>) in
                let step = read { contents, current in
                    let step = take(&contents, current: current)
                    if case .wait = step { park(continuation, in: &contents) }
                    return step
                }
                if case .wait = step { return }
                continuation.resume(returning: step)
            }
            switch step {
            case .state(let state): return state
            case .end: return nil
            // A `.latest` stream woken to read the object's state.
            case .wait: continue
            }
        }
    }

    /// Runs `body` under the feed's lock; for a `.latest` stream whose object lives, with the object's state, under
    /// the object's lock too (taken first, as a change takes them).
    @inlinable func read(_ body: (inout StateFeed<State>.Contents, State?) -> Step) -> Step {
        if let current, let step = current({ state in feed.contents.withLock { body(&$0, state) } }) { return step }
        return feed.contents.withLock { body(&$0, nil) }
    }

    /// The consumer's task was cancelled: the stream ends and unregisters, a parked `next()` at once.
    @inlinable func cancel() {
        let (parked, unregistered) = feed.contents.withLock {
            contents -> (UnsafeContinuation<Step, Never>?, Bool) in
            let unregistered = contents.unregister(self)
            guard let parked = continuation.take() else { return (nil, unregistered) }
            // Still among the waiters (not yet taken by a change): out of them, in O(1).
            if index >= 0, index < contents.waiters.count, contents.waiters[index] === self {
                let last = contents.waiters.removeLast()
                if last !== self {
                    contents.waiters[index] = last
                    last.index = index
                }
            }
            index = -1
            return (parked, unregistered)
        }
        parked?.resume(returning: .end)
        if unregistered { feed.readersChanged() }
    }

    /// Parks `continuation` until the next change; under the feed's lock.
    @inlinable func park(_ continuation: UnsafeContinuation<Step, Never>, in contents: inout StateFeed<State>.Contents)
    {
        self.continuation = continuation
        index = contents.waiters.count
        contents.waiters.append(self)
    }

    /// The next state, if one waits; under the feed's lock, with the object's state for a `.latest` stream whose
    /// object lives.
    @inlinable func take(_ contents: inout StateFeed<State>.Contents, current: State?) -> Step {
        if isUnregistered { return .end }
        if let first {
            self.first = nil
            return .state(first)
        }
        if readsLog {
            if let next = node?.next, let state = next.state {
                node = next
                next.read()
                return .state(state)
            }
        } else if version != contents.version, let state = current ?? contents.finalState {
            version = contents.version
            return .state(state)
        }
        return contents.isFinished ? .end : .wait
    }
}
