/// Where an object's `states` streams read its changes: one log shared by every stream, instead of a buffer and
/// a yield per stream.
///
/// A change is published once, under the object's lock: it becomes the feed's newest state and, while a
/// `.everyChange` stream is registered, a node at the end of the log. Each `.everyChange` stream holds the node it
/// read last and walks the log at its own pace; a node lets go of its state once every stream has read it, and is
/// freed once none holds it. A `.latest` stream holds no node: it reads the newest state when the feed's version
/// moved. A stream with nothing to read parks its continuation in the feed; a change hands each parked stream its
/// next state under one lock and resumes them after it, so delivering to many streams costs a resumption each,
/// and reading a state costs its stream one lock.
@usableFromInline final class StateFeed<State: Sendable>: Sendable {
    @usableFromInline struct Contents {
        /// The newest state, while a `.latest` stream has not read it: no stream holds an old value, and an object
        /// changing its state in place does not copy it for the feed.
        @usableFromInline var state: State?
        /// How many `.latest` streams have not read `state`.
        @usableFromInline var stateUnread = 0
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

    @inlinable init() {}

    /// Registers a stream that starts at `state`, the object's current state; called under the object's lock,
    /// so no change comes between the two.
    @usableFromInline func register(startingAt state: State, everyChange: Bool) -> StateReader<State> {
        contents.withLock { contents in
            contents.readers += 1
            guard everyChange else {
                // `.latest` reads the feed's state when its version moved: one behind, it reads this one first.
                contents.state = state
                contents.stateUnread += 1
                return StateReader(feed: self, first: nil, anchor: nil, version: contents.version &- 1)
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
            let latestReaders = contents.readers - contents.logReaders
            contents.stateUnread = latestReaders
            contents.state = latestReaders > 0 ? state : nil
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

    /// Wakes the streams ``publish(_:)`` returned, each with its next state, taken for it under the feed's lock (a
    /// stream a cancellation woke already is skipped); resumes them after it.
    @usableFromInline func wake(_ waiting: [StateReader<State>]) {
        var waiting = waiting
        var resumptions: [(UnsafeContinuation<State?, Never>, State?)] = []
        resumptions.reserveCapacity(waiting.count)
        contents.withLock { contents in
            for reader in waiting {
                guard let continuation = reader.continuation.take() else { continue }
                reader.index = -1
                switch reader.take(&contents) {
                case .state(let state): resumptions.append((continuation, state))
                case .end: resumptions.append((continuation, nil))
                case .wait: reader.park(continuation, in: &contents)
                }
            }
        }
        for (continuation, state) in resumptions { continuation.resume(returning: state) }
        // Emptied outside the lock: a stream cancelled meanwhile may be freed here, and it unregisters under it.
        waiting.removeAll(keepingCapacity: true)
        contents.withLock { contents in
            if contents.spare.capacity < waiting.capacity { swap(&contents.spare, &waiting) }
        }
    }

    /// The object is gone: parked streams wake to read what is left, then end.
    func finish() {
        let waiting = contents.withLock { contents -> [StateReader<State>] in
            contents.isFinished = true
            defer { contents.waiters = [] }
            return contents.waiters
        }
        wake(waiting)
    }

    /// How many streams are registered.
    var readerCount: Int { contents.withLock { $0.readers } }

    /// A stream is gone: the states it had not read no longer wait for it.
    func unregister(_ reader: StateReader<State>) {
        contents.withLock { contents in contents.unregister(reader) }
    }
}

extension StateFeed.Contents {
    /// A `.latest` stream read `state`.
    @inlinable mutating func readLatest() {
        stateUnread -= 1
        if stateUnread <= 0 { state = nil }
    }

    /// A stream was cancelled or is gone, once: the states it had not read no longer wait for it.
    @usableFromInline mutating func unregister(_ reader: StateReader<State>) {
        guard !reader.isUnregistered else { return }
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
        } else if reader.version != version {
            readLatest()
        }
        reader.first = nil
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
    @usableFromInline var continuation: UnsafeContinuation<State?, Never>?
    /// Where the parked `next()` sits in the feed's waiters, while it is there.
    @usableFromInline var index = -1
    /// Cancelled: the stream ends, and no longer counts as registered.
    @usableFromInline var isUnregistered = false

    @usableFromInline init(feed: StateFeed<State>, first: State?, anchor: StateLogNode<State>?, version: UInt64) {
        self.feed = feed
        self.readsLog = anchor != nil
        self.first = first
        self.node = anchor
        self.version = version
    }

    deinit { feed.unregister(self) }

    @usableFromInline enum Step {
        case state(State)
        case end
        case wait
    }

    /// The next state: at once if one waits, else when the next change is published; `nil` once the stream was
    /// cancelled, or its object is gone and every change was read.
    @inlinable func next() async -> State? {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<State?, Never>) in
            let step = feed.contents.withLock { contents in
                let step = take(&contents)
                if case .wait = step { park(continuation, in: &contents) }
                return step
            }
            switch step {
            case .state(let state): continuation.resume(returning: state)
            case .end: continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }

    /// The consumer's task was cancelled: the stream ends and unregisters, a parked `next()` at once.
    @inlinable func cancel() {
        let parked = feed.contents.withLock { contents -> UnsafeContinuation<State?, Never>? in
            contents.unregister(self)
            guard let parked = continuation.take() else { return nil }
            // Still among the waiters (not yet taken by a change): out of them, in O(1).
            if index >= 0, index < contents.waiters.count, contents.waiters[index] === self {
                let last = contents.waiters.removeLast()
                if last !== self {
                    contents.waiters[index] = last
                    last.index = index
                }
            }
            index = -1
            return parked
        }
        parked?.resume(returning: nil)
    }

    /// Parks `continuation` until the next change; under the feed's lock.
    @inlinable func park(
        _ continuation: UnsafeContinuation<State?, Never>, in contents: inout StateFeed<State>.Contents
    ) {
        self.continuation = continuation
        index = contents.waiters.count
        contents.waiters.append(self)
    }

    /// The next state, if one waits; under the feed's lock.
    @inlinable func take(_ contents: inout StateFeed<State>.Contents) -> Step {
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
        } else if version != contents.version, let state = contents.state {
            version = contents.version
            contents.readLatest()
            return .state(state)
        }
        return contents.isFinished ? .end : .wait
    }
}
