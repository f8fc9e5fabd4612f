import Foundation
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(10))) struct ListModelTests {
    @Test func listFollowsTheReferenceModelUnderRandomSchedules() async throws {
        await ScheduleSettings.run { seed in try await runSchedule(seed: seed, steps: 30) }
    }

    func runSchedule(seed: UInt64, steps: Int) async throws {
        var random = SeededGenerator(state: seed)
        let transport = ControlledTransport()
        let list = ListResource<RemoteItems>(session: makeTimelessSession(transport), request: ())
        let recorder = list.recordStates()
        var model = ListModel()
        var tasks: [Int: Task<Void, any Error>] = [:]
        var log: [String] = []

        func settle() async throws {
            let requests = model.startedCount
            let waiting = model.waitingCount
            do {
                try await waitUntil("\(requests) requests and \(waiting) waiting callers") {
                    transport.requestCount == requests && list.waitingCallerCount == waiting
                }
            } catch {
                throw Mismatch(
                    description: "after \(log.joined(separator: "; ")): expected \(requests) requests and \(waiting) "
                        + "waiting, saw \(transport.requestCount) and \(list.waitingCallerCount); machine: \(list.machineDescription)"
                )
            }
        }
        func check(_ call: Int, _ expected: NetworkError) async throws {
            do {
                try await tasks[call]?.value
                throw Mismatch(description: "call \(call) returned instead of throwing \(expected)")
            } catch let error as NetworkError {
                guard error == expected else {
                    throw Mismatch(description: "call \(call) threw \(error), not \(expected)")
                }
            }
        }

        for step in 0..<steps {
            let live = model.operations.indices.filter {
                !model.operations[$0].isEnded && model.operations[$0].transportIndex != nil
            }
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 4 || (live.isEmpty && model.callOperation.isEmpty) {
                let choice = Int.random(in: 0..<10, using: &random)
                let id = String(format: "i%03d", Int.random(in: 0..<50, using: &random))
                switch choice {
                case 0..<4:
                    log.append("\(step): next")
                    _ = model.askNext(step)
                    tasks[step] = Task { try await list.loadNextPage() }
                case 4..<6:
                    log.append("\(step): refresh")
                    _ = model.askFirst(step)
                    tasks[step] = Task { try await list.refresh() }
                case 6:
                    let item = Item(id: "c\(step)", n: step)
                    log.append("\(step): create \(item.id)")
                    model.askMutation(step, .create(item))
                    tasks[step] = Task { try await list.create(item) }
                case 7, 8:
                    let item = Item(id: id, n: 1000 + step)
                    log.append("\(step): update \(id)")
                    model.askMutation(step, .update(item))
                    tasks[step] = Task { try await list.update(item) }
                default:
                    log.append("\(step): delete \(id)")
                    model.askMutation(step, .delete(id))
                    tasks[step] = Task { try await list.delete(Item(id: id, n: 0)) }
                }
                // A call the model ends at once (a next page past the end) leaves the counts as they were, so
                // `settle` alone would not wait for it: await it, or a later call could reach the list first.
                if model.callOperation[step] == nil { _ = try? await tasks[step]?.value }
                try await settle()
            } else if roll < 6, let call = model.callOperation.keys.sorted().randomElement(using: &random) {
                log.append("\(step): cancel \(call)")
                let index = model.callOperation[call]!
                model.cancel(call)
                tasks[call]?.cancel()
                try await check(call, .cancelled)
                if model.operations[index].isAbandoned, let request = model.operations[index].transportIndex {
                    try await transport.waitUntilFinished(request)
                }
                try await settle()
            } else if let index = live.randomElement(using: &random) {
                let operation = model.operations[index]
                let request = operation.transportIndex!
                let failure: NetworkError? =
                    Int.random(in: 0..<8, using: &random) == 0
                    ? .httpStatus(code: 500, body: Data("s\(index)".utf8)) : nil
                log.append("\(step): answer \(request) (\(operation.kind))\(failure == nil ? "" : " with 500")")
                if let failure, let code = failure.statusCode, let body = failure.body {
                    transport.answer(request, .success(HTTPResponse(statusCode: code, body: body)))
                } else {
                    switch operation.kind {
                    case .first:
                        let body = envelope(ListModel.page(1, step: index), page: 1, totalPages: ListModel.totalPages)
                        transport.answer(request, .success(HTTPResponse(statusCode: 200, body: body)))
                    case .next(let page, _):
                        let body = envelope(
                            ListModel.page(page, step: index), page: page, totalPages: ListModel.totalPages)
                        transport.answer(request, .success(HTTPResponse(statusCode: 200, body: body)))
                    case .create(let item), .update(let item):
                        transport.answer(request, json: String(decoding: try JSONEncoder().encode(item), as: UTF8.self))
                    case .delete:
                        transport.answer(request, json: "", status: 204)
                    }
                }
                let before = model.superseded
                model.answer(index, failure: failure)
                for caller in operation.callers { _ = try? await tasks[caller.call]?.value }
                for call in model.superseded.subtracting(before) { try await check(call, .superseded) }
                if let dropped = model.operations.indices.first(where: {
                    model.operations[$0].isAbandoned
                        && model.operations[$0].transportIndex.map(transport.isHeld) == true
                }), let request = model.operations[dropped].transportIndex {
                    try await transport.waitUntilFinished(request)
                }
                try await settle()
            }
            if list.listState != model.published.last {
                throw Mismatch(
                    description:
                        "after \(log.joined(separator: "; ")):\n  list  \(list.listState)\n  model \(model.published.last!)"
                )
            }
        }
        do {
            try await recorder.expect(model.published, timeout: .seconds(5))
        } catch {
            throw Mismatch(description: "after \(log.joined(separator: "; ")): \(error)")
        }
        for task in tasks.values { task.cancel() }
        for task in tasks.values { _ = try? await task.value }
    }
}
