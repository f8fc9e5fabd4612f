import Foundation
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How many schedules the model tests run: `RESOURCEKIT_SCHEDULES`, or a short default for every run.
/// `RESOURCEKIT_SEED` replays one schedule.
enum ScheduleSettings {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let seed = environment["RESOURCEKIT_SEED"].flatMap(UInt64.init) { return [seed] }
        let count = environment["RESOURCEKIT_SCHEDULES"].flatMap(Int.init) ?? 150
        let base = UInt64.random(in: 0..<(1 << 48))
        return (0..<UInt64(count)).map { base &+ $0 }
    }

    /// Runs one schedule per seed; the first that fails is recorded with the seed that replays it.
    static func run(_ schedule: (UInt64) async throws -> Void) async {
        for seed in seeds {
            do {
                try await schedule(seed)
            } catch {
                Issue.record("schedule failed; replay with RESOURCEKIT_SEED=\(seed): \(error)")
                return
            }
        }
    }
}

/// The contract of `Resource`, written as plainly as possible: every caller has a rank (the order it asked
/// in; a queued mutation's is the moment it is sent, a completed mutation's the moment it completes); the
/// shown answer is the newest-ranked one that arrived; the state is `loading` while a caller newer than that
/// waits. Reads of one id share a request unless a mutation completed (or was abandoned) after it was sent.
/// A failure changes no value: an older answer that arrives after it, newer than the value it keeps, becomes
/// its `previous`.
struct ResourceModel {
    enum Kind: Equatable {
        case read(String)
        case update(String)
        case delete
        var isMutation: Bool {
            if case .read = self { return false }
            return true
        }
    }

    struct Operation {
        var kind: Kind
        var callers: [(call: Int, rank: Int)] = []
        var transportIndex: Int?
        var isJoinable = false
        var isEnded = false
        var isAbandoned = false
    }

    var clock = 0
    var settled: ResourceState<Post> = .idle
    var settledRank = 0
    /// The rank of the value `settled` holds (its `previous` when it is a failure).
    var valueRank = 0
    var operations: [Operation] = []
    var callOperation: [Int: Int] = [:]
    var startedCount = 0
    var mutationQueue: [Int] = []
    var runningMutation: Int?
    var published: [ResourceState<Post>] = [.idle]
    var shownLoading = false

    var state: ResourceState<Post> { published.last ?? .idle }
    var waitingCount: Int { callOperation.count }

    mutating func tick() -> Int {
        clock += 1
        return clock
    }

    mutating func publish(settledChanged: Bool) {
        let newest = operations.filter { !$0.isEnded }.flatMap(\.callers).map(\.rank).max() ?? 0
        let loading = newest > settledRank
        guard settledChanged || loading != shownLoading else { return }
        shownLoading = loading
        published.append(loading ? .loading(previous: settled.value) : settled)
    }

    mutating func start(_ index: Int) {
        operations[index].transportIndex = startedCount
        startedCount += 1
    }

    /// Returns the operation index the call joined or started.
    mutating func ask(_ call: Int, _ kind: Kind) -> Int {
        let rank = tick()
        if case .read(let id) = kind,
            let index = operations.indices.first(where: {
                operations[$0].kind == .read(id) && operations[$0].isJoinable && !operations[$0].isEnded
            })
        {
            operations[index].callers.append((call, rank))
            callOperation[call] = index
            publish(settledChanged: false)
            return index
        }
        operations.append(Operation(kind: kind, callers: [(call, rank)]))
        let index = operations.count - 1
        callOperation[call] = index
        if kind.isMutation {
            if runningMutation == nil {
                runningMutation = index
                start(index)
            } else {
                mutationQueue.append(index)
            }
        } else {
            operations[index].isJoinable = true
            start(index)
        }
        publish(settledChanged: false)
        return index
    }

    mutating func cancel(_ call: Int) {
        guard let index = callOperation.removeValue(forKey: call) else { return }
        operations[index].callers.removeAll { $0.call == call }
        guard operations[index].callers.isEmpty else { return publish(settledChanged: false) }
        if operations[index].transportIndex == nil {
            operations[index].isEnded = true
            mutationQueue.removeAll { $0 == index }
            return publish(settledChanged: false)
        }
        operations[index].isAbandoned = true
        operations[index].isJoinable = false
        if operations[index].kind.isMutation {
            for other in operations.indices { operations[other].isJoinable = false }
        }
        publish(settledChanged: false)
        // The transport ends the abandoned request at once; a mutation's end lets the next one start.
        operations[index].isEnded = true
        if operations[index].kind.isMutation { startNextMutation() }
    }

    mutating func answer(_ index: Int, with result: Result<ResourceOutcomeValue, NetworkError>) {
        var operation = operations[index]
        operation.isEnded = true
        operation.isJoinable = false
        var changed = false
        let completion = tick()
        if !operation.callers.isEmpty {
            for caller in operation.callers { callOperation[caller.call] = nil }
            let rank = operation.kind.isMutation ? completion : operation.callers.map(\.rank).max() ?? 0
            if rank > settledRank {
                switch result {
                case .success(.value(let post)): settled = .available(post)
                case .success(.removed): settled = .idle
                case .failure(let error): settled = .failure(error, previous: settled.value)
                }
                settledRank = rank
                if case .success = result { valueRank = rank }
                changed = true
            } else if rank > valueRank, case .success(let outcome) = result, case .failure(let error, _) = settled {
                switch outcome {
                case .value(let post): settled = .failure(error, previous: post)
                case .removed: settled = .failure(error, previous: nil)
                }
                valueRank = rank
                changed = true
            }
            operation.callers = []
        }
        operations[index] = operation
        if operation.kind.isMutation {
            for other in operations.indices { operations[other].isJoinable = false }
        }
        // The next mutation's turn comes with this completion, and ranks after it: the state stays `loading`.
        if operation.kind.isMutation { startNextMutation(publishing: false) }
        publish(settledChanged: changed)
    }

    mutating func startNextMutation(publishing: Bool = true) {
        runningMutation = nil
        while !mutationQueue.isEmpty {
            let index = mutationQueue.removeFirst()
            guard !operations[index].isEnded else { continue }
            runningMutation = index
            start(index)
            let rank = tick()
            for position in operations[index].callers.indices { operations[index].callers[position].rank = rank }
            if publishing { publish(settledChanged: false) }
            return
        }
    }
}

/// A schedule whose outcome differs from its model's, with the steps that led there.
struct Mismatch: Error, CustomStringConvertible {
    var description: String
}

enum ResourceOutcomeValue {
    case value(Post)
    case removed
}

@Suite(.timeLimit(.minutes(10))) struct ResourceModelTests {
    @Test func resourceFollowsTheReferenceModelUnderRandomSchedules() async throws {
        await ScheduleSettings.run { seed in try await runSchedule(seed: seed, steps: 30) }
    }

    func runSchedule(seed: UInt64, steps: Int) async throws {
        var random = SeededGenerator(state: seed)
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeTimelessSession(transport))
        let recorder = resource.recordStates()
        var model = ResourceModel()
        var tasks: [Int: Task<Post?, any Error>] = [:]
        var log: [String] = []
        let ids = ["1", "2", "3"]

        func settle() async throws {
            let expectedRequests = model.startedCount
            let expectedWaiting = model.waitingCount
            do {
                try await waitUntil(
                    "\(expectedRequests) requests and \(expectedWaiting) waiting callers", timeout: .seconds(120)
                ) {
                    transport.requestCount == expectedRequests && resource.waitingCallerCount == expectedWaiting
                }
            } catch {
                throw Mismatch(
                    description: "after \(log.joined(separator: "; ")): expected \(expectedRequests) requests and "
                        + "\(expectedWaiting) waiting, saw \(transport.requestCount) and \(resource.waitingCallerCount); "
                        + "machine: \(resource.machineDescription)"
                )
            }
        }

        for step in 0..<steps {
            let live = model.operations.indices.filter {
                !model.operations[$0].isEnded && model.operations[$0].transportIndex != nil
            }
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 4 || (live.isEmpty && model.callOperation.isEmpty) {
                let call = step
                let choice = Int.random(in: 0..<10, using: &random)
                let id = ids.randomElement(using: &random)!
                let kind: ResourceModel.Kind = choice < 6 ? .read(id) : choice < 9 ? .update(id) : .delete
                log.append("\(step): ask \(kind)")
                _ = model.ask(call, kind)
                tasks[call] = Task {
                    switch kind {
                    case .read(let id): return try await resource.read(id)
                    case .update(let id): return try await resource.update(Post(id: id, title: "u\(step)"))
                    case .delete: return try await resource.delete(Post(id: "1", title: ""))
                    }
                }
                try await settle()
            } else if roll < 6, let call = model.callOperation.keys.sorted().randomElement(using: &random) {
                log.append("\(step): cancel call \(call)")
                let operation = model.callOperation[call]!
                model.cancel(call)
                tasks[call]?.cancel()
                do {
                    _ = try await tasks[call]?.value
                    throw Mismatch(description: "cancelled call \(call) returned a value")
                } catch let error as NetworkError {
                    guard error == .cancelled else {
                        throw Mismatch(description: "cancelled call \(call) threw \(error)")
                    }
                }
                if model.operations[operation].isAbandoned, let index = model.operations[operation].transportIndex {
                    try await transport.waitUntilFinished(index)
                }
                try await settle()
            } else if let index = live.randomElement(using: &random) {
                let operation = model.operations[index]
                let fails = Int.random(in: 0..<10, using: &random) == 0
                let transportIndex = operation.transportIndex!
                let result: Result<ResourceOutcomeValue, NetworkError>
                if fails {
                    let error = NetworkError.httpStatus(code: 500, body: Data("s\(step)".utf8))
                    result = .failure(error)
                    transport.answer(transportIndex, json: "s\(step)", status: 500)
                } else {
                    switch operation.kind {
                    case .read(let id), .update(let id):
                        let post = Post(id: id, title: "s\(step)")
                        result = .success(.value(post))
                        transport.answer(transportIndex, json: json(post))
                    case .delete:
                        result = .success(.removed)
                        transport.answer(transportIndex, json: "", status: 204)
                    }
                }
                log.append("\(step): answer request \(transportIndex) (\(operation.kind)) with \(result)")
                let callers = operation.callers.map(\.call)
                model.answer(index, with: result)
                for call in callers { _ = try? await tasks[call]?.value }
                try await settle()
            }
            if resource.state != model.state {
                throw Mismatch(
                    description: "after \(log.joined(separator: "; ")): state \(resource.state), model \(model.state)")
            }
        }
        let expected = model.published
        do {
            try await recorder.expect(expected, timeout: .seconds(5))
        } catch {
            throw Mismatch(description: "after \(log.joined(separator: "; ")): \(error)")
        }
        for task in tasks.values { task.cancel() }
        for task in tasks.values { _ = try? await task.value }
    }
}
