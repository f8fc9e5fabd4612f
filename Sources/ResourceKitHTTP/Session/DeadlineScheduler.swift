/// What a ``DeadlineScheduler`` runs at a deadline: an object, not a closure, so scheduling allocates nothing.
protocol DeadlineAction: AnyObject, Sendable {
    /// The deadline has come.
    func deadlinePassed()
}

/// Runs actions at their deadlines on a session's clock with one timer for all of them.
///
/// Most requests end long before their deadline, so scheduling and cancelling must be cheap: both are a
/// lock and a heap or dictionary operation. The single timer task sleeps until the earliest deadline; it is
/// replaced only when an earlier deadline arrives, and ends when nothing is left to wait for. A cancelled
/// entry stays in the heap until it reaches the top or the heap is rebuilt, which happens once stale
/// entries outnumber live ones.
final class DeadlineScheduler: Sendable {
    private struct Entry {
        var deadline: Duration
        var id: UInt64
    }

    private struct State {
        var actions: [UInt64: any DeadlineAction] = [:]
        var heap: [Entry] = []
        var nextID: UInt64 = 0
        /// When the current timer wakes, and which timer that is.
        var armed: Duration?
        var generation: UInt64 = 0
        var timer: Task<Void, Never>?
    }

    private let state = Locked(State())
    private let timeline: Timeline

    init(timeline: Timeline) { self.timeline = timeline }

    /// Runs `action` at `deadline` unless cancelled first; returns the token that cancels it.
    func schedule(at deadline: Duration, _ action: any DeadlineAction) -> UInt64 {
        let (id, replaced) = state.withLock { state -> (UInt64, Task<Void, Never>?) in
            state.nextID &+= 1
            let id = state.nextID
            state.actions[id] = action
            Self.push(Entry(deadline: deadline, id: id), into: &state.heap)
            if let armed = state.armed, armed <= deadline { return (id, nil) }
            return (id, arm(&state, until: deadline))
        }
        replaced?.cancel()
        return id
    }

    /// Cancels the action of `token` if it has not run.
    func cancel(_ token: UInt64) {
        state.withLock { state in
            guard state.actions.removeValue(forKey: token) != nil else { return }
            if state.actions.isEmpty {
                state.heap.removeAll(keepingCapacity: true)
            } else if state.heap.count > 2 * state.actions.count + 64 {
                state.heap = state.heap.filter { state.actions[$0.id] != nil }
                Self.heapify(&state.heap)
            }
        }
    }

    /// Starts a timer for `deadline` and returns the one it replaces. Called with the lock held.
    private func arm(_ state: inout State, until deadline: Duration) -> Task<Void, Never>? {
        let replaced = state.timer
        state.generation &+= 1
        let generation = state.generation
        state.armed = deadline
        let timeline = self.timeline
        state.timer = Task { [weak self] in
            do {
                try await timeline.sleep(until: deadline)
            } catch {
                return
            }
            self?.fire(generation)
        }
        return replaced
    }

    private func fire(_ generation: UInt64) {
        let now = timeline.now
        let due = state.withLock { state -> [any DeadlineAction] in
            var due: [any DeadlineAction] = []
            while let top = state.heap.first, top.deadline <= now || state.actions[top.id] == nil {
                Self.popFirst(from: &state.heap)
                if let action = state.actions.removeValue(forKey: top.id) { due.append(action) }
            }
            // A timer that was replaced leaves the current one alone.
            guard generation == state.generation else { return due }
            if let next = state.heap.first {
                // What `arm` replaces is this very timer, which is ending by itself.
                _ = arm(&state, until: next.deadline)
            } else {
                state.armed = nil
                state.timer = nil
            }
            return due
        }
        for action in due { action.deadlinePassed() }
    }

    // MARK: Binary min-heap on `deadline`.

    private static func push(_ entry: Entry, into heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popFirst(from heap: inout [Entry]) {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(&heap, from: 0)
    }

    private static func heapify(_ heap: inout [Entry]) {
        guard heap.count > 1 else { return }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(&heap, from: index) }
    }

    private static func siftDown(_ heap: inout [Entry], from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
