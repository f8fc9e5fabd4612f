import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The contract of `ListResource`, written plainly: first-page loads rank like reads; a next page belongs to
/// the list it was asked for and is superseded when a newer first page lands; mutations run in call order,
/// apply at once, and are applied again over any page sent before they completed.
struct ListModel {
    enum Kind {
        case first
        case next(page: Int, epoch: Int)
        case create(Item)
        case update(Item)
        case delete(String)

        var isPage: Bool {
            switch self {
            case .first, .next: true
            default: false
            }
        }
    }

    enum Change {
        case inserted(Item)
        case replaced(Item)
        case removed
    }

    struct Operation {
        var kind: Kind
        var sentAt: Int
        var callers: [(call: Int, rank: Int)] = []
        var transportIndex: Int?
        var isEnded = false
        var isAbandoned = false
    }

    static let totalPages = 5

    var clock = 0
    var items: [Item] = []
    var content: ResourceState<[Item]> = .idle
    var pagination = PaginationStatus()
    var nextPageNumber: Int? = 1
    var settledRank = 0
    var epoch = 0
    var changes: [String: (rank: Int, change: Change)] = [:]
    var operations: [Operation] = []
    var callOperation: [Int: Int] = [:]
    var superseded: Set<Int> = []
    var startedCount = 0
    var joinableFirst: Int?
    var nextOperation: Int?
    var runningMutation: Int?
    var mutationQueue: [Int] = []
    var published: [ListState<Item>] = [ListState()]
    var shown = (first: false, next: false)

    var waitingCount: Int { callOperation.count }

    mutating func tick() -> Int {
        clock += 1
        return clock
    }

    mutating func publish(settledChanged: Bool) {
        let firstRank =
            operations.filter { if case .first = $0.kind { !$0.isEnded } else { false } }
            .flatMap(\.callers).map(\.rank).max() ?? 0
        let first = firstRank > settledRank
        let next = nextOperation != nil
        guard settledChanged || first != shown.first || next != shown.next else { return }
        shown = (first, next)
        var state = ListState(content: content, pagination: pagination)
        if next {
            state.pagination.isLoadingNextPage = true
            state.pagination.nextPageError = nil
            if case .failure(_, let previous) = state.content { state.content = .available(previous ?? []) }
        }
        if first { state.content = .loading(previous: content.value) }
        published.append(state)
    }

    mutating func start(_ index: Int) {
        operations[index].transportIndex = startedCount
        startedCount += 1
    }

    /// Returns whether the call waits (it registered as a caller).
    mutating func askNext(_ call: Int) -> Bool {
        let firstWanted = operations.contains { op in if case .first = op.kind { !op.callers.isEmpty } else { false } }
        if pagination.pagesLoaded == 0 || firstWanted { return askFirst(call) }
        guard pagination.hasMore, let page = nextPageNumber else { return false }
        let rank = tick()
        if let index = nextOperation {
            operations[index].callers.append((call, rank))
            callOperation[call] = index
        } else {
            operations.append(Operation(kind: .next(page: page, epoch: epoch), sentAt: rank, callers: [(call, rank)]))
            let index = operations.count - 1
            callOperation[call] = index
            nextOperation = index
            start(index)
        }
        publish(settledChanged: false)
        return true
    }

    mutating func askFirst(_ call: Int) -> Bool {
        let rank = tick()
        if let index = joinableFirst {
            operations[index].callers.append((call, rank))
            callOperation[call] = index
        } else {
            operations.append(Operation(kind: .first, sentAt: rank, callers: [(call, rank)]))
            let index = operations.count - 1
            callOperation[call] = index
            joinableFirst = index
            start(index)
        }
        publish(settledChanged: false)
        return true
    }

    mutating func askMutation(_ call: Int, _ kind: Kind) {
        let rank = tick()
        operations.append(Operation(kind: kind, sentAt: rank, callers: [(call, rank)]))
        let index = operations.count - 1
        callOperation[call] = index
        if runningMutation == nil {
            runningMutation = index
            start(index)
        } else {
            mutationQueue.append(index)
        }
    }

    mutating func cancel(_ call: Int) {
        guard let index = callOperation.removeValue(forKey: call) else { return }
        operations[index].callers.removeAll { $0.call == call }
        guard operations[index].callers.isEmpty else { return publish(settledChanged: false) }
        if operations[index].transportIndex == nil {
            operations[index].isEnded = true
            mutationQueue.removeAll { $0 == index }
            return
        }
        abandon(index)
        publish(settledChanged: false)
        operations[index].isEnded = true
        if !operations[index].kind.isPage { startNextMutation() }
        forgetChanges()
    }

    mutating func abandon(_ index: Int) {
        operations[index].isAbandoned = true
        if joinableFirst == index || !operations[index].kind.isPage { joinableFirst = nil }
        if nextOperation == index { nextOperation = nil }
    }

    /// `page` is the answer's items for page answers, `item` for create and update.
    mutating func answer(_ index: Int, failure: NetworkError?) {
        var operation = operations[index]
        operations[index].isEnded = true
        if joinableFirst == index { joinableFirst = nil }
        if nextOperation == index { nextOperation = nil }
        var changed = false
        if !operation.callers.isEmpty {
            for caller in operation.callers { callOperation[caller.call] = nil }
            switch operation.kind {
            case .first:
                let rank = operation.callers.map(\.rank).max() ?? 0
                if rank > settledRank {
                    if let failure {
                        content = .failure(failure, previous: content.value)
                    } else {
                        replace(with: Self.page(1, step: index), sentAt: operation.sentAt)
                    }
                    settledRank = rank
                    changed = true
                }
            case .next(let page, let pageEpoch) where pageEpoch == epoch:
                if let failure {
                    pagination.nextPageError = failure
                    content = .failure(failure, previous: items)
                } else {
                    merge(Self.page(page, step: index), sentAt: operation.sentAt)
                    pagination.pagesLoaded += 1
                    nextPageNumber = page < Self.totalPages ? page + 1 : nil
                    pagination.hasMore = nextPageNumber != nil
                    pagination.nextPageError = nil
                    content = .available(items)
                }
                changed = true
            case .next: break
            case .create(let item) where failure == nil: changed = apply(item.id, .inserted(item))
            case .update(let item) where failure == nil: changed = apply(item.id, .replaced(item))
            case .delete(let id) where failure == nil: changed = apply(id, .removed)
            default: break
            }
            operation.callers = []
            operations[index].callers = []
        }
        if !operation.kind.isPage {
            if !operation.isAbandoned { joinableFirst = nil }
            startNextMutation()
        }
        forgetChanges()
        publish(settledChanged: changed)
    }

    static func page(_ number: Int, step: Int) -> [Item] {
        ((number - 1) * 10..<number * 10).map { Item(id: String(format: "i%03d", $0), n: step) }
    }

    mutating func replace(with page: [Item], sentAt: Int) {
        items = []
        merge(page, sentAt: sentAt)
        for (id, entry) in changes.sorted(by: { $0.value.rank < $1.value.rank }) where entry.rank > sentAt {
            if case .inserted(let item) = entry.change, !items.contains(where: { $0.id == id }) { items.append(item) }
        }
        epoch += 1
        nextPageNumber = 1 < Self.totalPages ? 2 : nil
        content = .available(items)
        pagination = PaginationStatus(hasMore: nextPageNumber != nil, pagesLoaded: 1)
        if let index = nextOperation {
            for caller in operations[index].callers {
                callOperation[caller.call] = nil
                superseded.insert(caller.call)
            }
            operations[index].callers = []
            abandon(index)
            operations[index].isEnded = true
        }
    }

    mutating func merge(_ page: [Item], sentAt: Int) {
        for var item in page {
            if let entry = changes[item.id], entry.rank > sentAt {
                switch entry.change {
                case .removed: continue
                case .inserted(let newer), .replaced(let newer): item = newer
                }
            }
            if let position = items.firstIndex(where: { $0.id == item.id }) {
                items[position] = item
            } else {
                items.append(item)
            }
        }
    }

    mutating func apply(_ id: String, _ change: Change) -> Bool {
        changes[id] = (tick(), change)
        let position = items.firstIndex { $0.id == id }
        switch (change, position) {
        case (.inserted(let item), nil): items.append(item)
        case (.inserted(let item), let position?), (.replaced(let item), let position?): items[position] = item
        case (.removed, let position?): items.remove(at: position)
        default: return false
        }
        content = .available(items)
        return true
    }

    mutating func forgetChanges() {
        let live = operations.filter { $0.kind.isPage && !$0.isEnded && !$0.isAbandoned }.map(\.sentAt)
        guard let oldest = live.min() else { return changes.removeAll() }
        changes = changes.filter { $0.value.rank > oldest }
    }

    mutating func startNextMutation() {
        runningMutation = nil
        while !mutationQueue.isEmpty {
            let index = mutationQueue.removeFirst()
            guard !operations[index].isEnded else { continue }
            runningMutation = index
            start(index)
            return
        }
    }
}
