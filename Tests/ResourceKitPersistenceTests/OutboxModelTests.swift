import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Seeded random sequences of changes, outages, refusals, replays, cancellations and restarts, each checked
/// after every step against a plain model of what the outbox promises: what the server holds, what is kept,
/// and what every holder shows. `RESOURCEKIT_SEED` replays one sequence; `RESOURCEKIT_SCHEDULES` sets how many.
@Suite(.timeLimit(.minutes(3))) struct OutboxModelTests {
    /// The promise, in a few lines.
    struct Model {
        enum Change: Equatable {
            case update(String, title: String)
            case delete(String)
            var item: String {
                switch self {
                case .update(let id, _), .delete(let id): id
                }
            }
        }

        var server: [String: String]
        var kept: [Change] = []
        var reachable = true
        var refusesNext = false

        /// What every holder shows of `id`: the server's value under the kept changes.
        func shown(_ id: String) -> String? {
            kept.filter { $0.item == id }.reduce(server[id]) { shown, change in
                switch change {
                case .update(_, let title): title
                case .delete: nil
                }
            }
        }

        /// What a list of the server's items shows of `id`: a kept change replaces or removes an item the list
        /// holds, and never adds one (an update of an item the server deleted shows in its resource only).
        func listed(_ id: String) -> String? { server[id] == nil ? nil : shown(id) }

        /// A change made now: kept, sent, refused or failed.
        mutating func make(_ change: Change) {
            guard reachable, !kept.contains(where: { $0.item == change.item }) else {
                kept.append(change)
                return
            }
            if refusesNext {
                refusesNext = false
                return
            }
            apply(change)
        }

        /// Whether the server took it (`false`: refused, as a 404 of an update is).
        @discardableResult mutating func apply(_ change: Change) -> Bool {
            switch change {
            case .update(let id, let title):
                guard server[id] != nil else { return false }
                server[id] = title
            case .delete(let id):
                server[id] = nil
            }
            return true
        }

        /// With the server reachable, every kept change lands or is refused (with the later changes of its
        /// item); nothing is left.
        mutating func replay() {
            guard reachable else { return }
            var refused: Set<String> = []
            for change in kept where !refused.contains(change.item) {
                let landed: Bool
                if refusesNext {
                    refusesNext = false
                    landed = false
                } else {
                    landed = apply(change)
                }
                if !landed { refused.insert(change.item) }
            }
            kept = []
        }
    }

    @Test func randomSequencesKeepEveryPromiseOfTheOutbox() async throws {
        let environment = ProcessInfo.processInfo.environment
        let schedules = Int(environment["RESOURCEKIT_SCHEDULES"] ?? "").map { max(1, $0 / 20) } ?? 40
        let seeds: [UInt64] =
            environment["RESOURCEKIT_SEED"].flatMap(UInt64.init).map { [$0] }
            ?? (0..<schedules).map { _ in UInt64.random(in: 1..<(1 << 40)) }
        for seed in seeds { try await run(seed: seed) }
    }

    private func run(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "outbox-model-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ids = ["1", "2", "3"]
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(ids.map { Post(id: $0, title: "original \($0)") }, into: "posts")
        var model = Model(server: Dictionary(uniqueKeysWithValues: ids.map { ($0, "original \($0)") }))

        func launch() throws -> ResourceStore {
            let persistence = StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
                queueWhenOffline: [.resources(RemotePost.self), .list(RemoteFeed.self)], writeDelay: .zero)
            let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
            let store = ResourceStore(session: session, persistence: persistence)
            return store
        }
        var store = try launch()
        var resources = ids.map { store.resource(RemotePost.self, id: $0) }
        var feed = store.list(RemoteFeed.self, request: "all")
        for (index, resource) in resources.enumerated() { _ = try await resource.read(ids[index]) }
        _ = try await feed.loadFirstPage()
        var log: [String] = []
        var counter = 0

        for step in 0..<30 {
            let action = random.next() % 100
            let id = ids[Int(random.next() % 3)]
            let resource = resources[ids.firstIndex(of: id)!]
            switch action {
            case 0..<35:
                counter += 1
                let title = "t\(counter)"
                log.append("update \(id) → \(title)")
                model.make(.update(id, title: title))
                let value = Post(id: id, title: title)
                // Through the item's resource or through the list: one outbox, one order per item.
                if random.next() % 2 == 0 {
                    _ = try? await resource.update(value, optimistic: value)
                } else {
                    _ = try? await feed.update(value, optimistic: value)
                }
            case 35..<50:
                log.append("delete \(id)")
                model.make(.delete(id))
                if random.next() % 2 == 0 {
                    _ = try? await resource.delete(Post(id: id, title: ""), optimistic: true)
                } else {
                    try? await feed.delete(Post(id: id, title: ""), optimistic: true)
                }
            case 50..<62:
                model.reachable.toggle()
                backend.isReachable = model.reachable
                log.append(model.reachable ? "online" : "offline")
            case 62..<75:
                log.append("replay")
                model.replay()
                await store.outbox?.replay()
            case 75..<82:
                log.append("refuse the next request")
                if !model.refusesNext {
                    model.refusesNext = true
                    backend.failNext(1, status: 400)
                }
            case 82..<90:
                let pending = store.outbox?.pending ?? []
                guard !pending.isEmpty else { continue }
                let position = Int(clamping: random.next() % UInt64(pending.count))
                log.append("cancel #\(position)")
                #expect(try await store.outbox?.cancel(pending[position].id) == true)
                model.kept.remove(at: position)
            default:
                log.append("restart")
                await store.persistence?.flush()
                store = try launch()
                resources = ids.map { store.resource(RemotePost.self, id: $0) }
                feed = store.list(RemoteFeed.self, request: "all")
            }
            // The promise, after every step.
            let server = try backend.records(Post.self, in: "posts")
            var broken: [String] = []
            if Dictionary(uniqueKeysWithValues: server.map { ($0.id, $0.title) }) != model.server {
                broken.append("the server holds \(server.map { "\($0.id): \($0.title)" })")
            }
            let kept = (store.outbox?.pending ?? []).map { "\($0.kind) \($0.itemID)" }
            let expected = model.kept.map { change in
                switch change {
                case .update(let id, _): "update \(id)"
                case .delete(let id): "delete \(id)"
                }
            }
            if kept != expected { broken.append("the outbox keeps \(kept), not \(expected)") }
            for (index, id) in ids.enumerated() {
                let shown = resources[index].state.value?.title
                if shown != model.shown(id) { broken.append("resource \(id) shows \(shown ?? "nothing")") }
                let listed = feed.items.first { $0.id == id }?.title
                if listed != model.listed(id) { broken.append("the feed shows \(id) as \(listed ?? "nothing")") }
            }
            #expect(broken.isEmpty, "seed \(seed), step \(step): \(broken) after \(log.joined(separator: "; "))")
            if !broken.isEmpty { return }
        }
    }
}
