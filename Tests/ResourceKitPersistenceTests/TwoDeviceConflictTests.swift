import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKitPersistence

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seeded random schedules of two or three devices — each a store with its own outbox on its own directory, each
/// with a conflict policy, a resource of each post and a feed of them all — editing and deleting the same posts
/// through resources and through the feed, refreshing feeds, taking pushes of the server's values, going
/// offline and online, losing the answers of writes the server took, restarting, replaying and resolving, checked against what the outbox promises: no write reaches the server unconditionally (so none
/// overwrites a change it did not see), every edit reaches the server or is reported (as a conflict with its
/// values, or as refused), each policy does what it says, a held change stays held across restarts, and once
/// every conflict is resolved every holder agrees with the server. `RESOURCEKIT_SEED` replays one schedule;
/// `RESOURCEKIT_SCHEDULES` sets how many (100 by default; `Scripts/test` runs 1,000).
@Suite(.timeLimit(.minutes(10)), .offThePool) struct TwoDeviceConflictTests {
    /// One device's way to the shared backend: cut while offline, and a record of the writes the server took.
    final class DeviceLink: HTTPTransport {
        struct Write: Sendable {
            var method: String
            var path: String
            var body: Post?
            var conditional: Bool
        }

        let backend: InMemoryBackend
        let offline = Locked(false)
        /// Whether the next write's answer is lost after the server took it (a connection cut mid-answer).
        let losesNextAnswer = Locked(false)
        let taken = Locked<[Write]>([])

        init(_ backend: InMemoryBackend) { self.backend = backend }

        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            if offline.withLock({ $0 }) {
                throw .transport(code: .notConnectedToInternet, message: "this device is offline")
            }
            let response = try await backend.send(request)
            if request.httpMethod != "GET", (200..<300).contains(response.statusCode) {
                let write = Write(
                    method: request.httpMethod ?? "", path: request.url?.path ?? "",
                    body: request.httpBody.flatMap { try? JSONDecoder().decode(Post.self, from: $0) },
                    conditional: request.value(forHTTPHeaderField: "If-Match") != nil
                        || request.value(forHTTPHeaderField: "If-Unmodified-Since") != nil)
                taken.withLock { $0.append(write) }
                if losesNextAnswer.withLock({ loses in
                    defer { loses = false }
                    return loses
                }) {
                    throw .transport(code: .networkConnectionLost, message: "the answer was lost")
                }
            }
            return response
        }
    }

    /// Reads an outbox's reports as they come; `settle()` waits until it has read every one made so far.
    final class Reports: Sendable {
        struct Read {
            var conflicts: [OutboxConflict] = []
            var failures: [OutboxFailure] = []
            /// The counts a waiter waits for, and its latch.
            var target = (conflicts: 0, failures: 0)
            var latch: AsyncLatch?

            mutating func openIfDone() {
                guard conflicts.count >= target.conflicts, failures.count >= target.failures else { return }
                latch?.open()
                latch = nil
            }
        }

        final class Box: Sendable {
            let read = Locked(Read())
        }

        let box = Box()
        let outbox: Outbox
        let start: (conflicts: Int, failures: Int)
        let tasks: [Task<Void, Never>]

        init(_ outbox: Outbox) {
            self.outbox = outbox
            start = outbox.reportCounts
            let (conflicts, failures, box) = (outbox.conflicts(), outbox.failures(), box)
            tasks = [
                Task {
                    for await conflict in conflicts {
                        box.read.withLock { read in
                            read.conflicts.append(conflict)
                            read.openIfDone()
                        }
                    }
                },
                Task {
                    for await failure in failures {
                        box.read.withLock { read in
                            read.failures.append(failure)
                            read.openIfDone()
                        }
                    }
                },
            ]
        }

        /// Waits until the streams have given every report the outbox made since this was made, and takes them.
        func take() async throws -> (conflicts: [OutboxConflict], failures: [OutboxFailure]) {
            let counts = outbox.reportCounts
            let latch = box.read.withLock { read -> AsyncLatch? in
                read.target = (counts.conflicts - start.conflicts, counts.failures - start.failures)
                guard read.conflicts.count < read.target.conflicts || read.failures.count < read.target.failures
                else { return nil }
                let latch = AsyncLatch()
                read.latch = latch
                return latch
            }
            try await latch?.wait()
            return box.read.withLock { read in
                defer {
                    read.conflicts = []
                    read.failures = []
                }
                return (read.conflicts, read.failures)
            }
        }

        deinit { for task in tasks { task.cancel() } }
    }

    /// One device: its directory, link, policy, store, resources and the reports of every launch.
    final class Device {
        let name: String
        let directory: URL
        let link: DeviceLink
        let policy: (ConflictPolicy<Post>, String)
        var store: ResourceStore!
        var resources: [Resource<RemotePost>] = []
        var feed: ListResource<RemoteFeed>!
        var reports: Reports!
        var conflicts: [OutboxConflict] = []
        var failures: [OutboxFailure] = []

        init(_ name: String, backend: InMemoryBackend, policy: (ConflictPolicy<Post>, String)) {
            self.name = name
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "two-devices-\(name)-\(UUID().uuidString)")
            link = DeviceLink(backend)
            self.policy = policy
        }

        var outbox: Outbox { store.outbox! }

        func launch(ids: [String]) throws {
            let persistence = StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
                queueWhenOffline: [
                    .resources(RemotePost.self, conflicts: policy.0, conditionalWhenOnline: true),
                    .list(
                        RemoteFeed.self, reading: RemotePost.self, conflicts: policy.0, detection: .preconditions,
                        conditionalWhenOnline: true),
                ],
                writeDelay: .zero)
            let session = NetworkSession(baseURL: "http://test.local/api", transport: link, timeLimit: nil)
            store = ResourceStore(session: session, persistence: persistence)
            resources = ids.map { store.resource(RemotePost.self, id: $0) }
            feed = store.list(RemoteFeed.self, request: "all")
            reports = Reports(outbox)
        }

        /// Reads every report made so far into `conflicts` and `failures`.
        func collect() async throws {
            let taken = try await reports!.take()
            conflicts += taken.conflicts
            failures += taken.failures
        }

        func restart(ids: [String]) async throws {
            try await collect()
            await store.persistence?.flush()
            let held = outbox.held.map(\.id)
            try launch(ids: ids)
            #expect(outbox.held.map(\.id) == held, "\(name): the held changes after a restart")
        }
    }

    static let policies: [(ConflictPolicy<Post>, String)] = [
        (.hold, "hold"), (.keepServer, "keepServer"), (.keepMine, "keepMine"), (.merge(mergeFields), "use"),
    ]

    @Test func devicesEditingTheSamePostsThroughFeedsAndPushesNeverOverwriteOneAnotherSilently() async throws {
        let environment = ProcessInfo.processInfo.environment
        let schedules = Int(environment["RESOURCEKIT_SCHEDULES"] ?? "") ?? 100
        let seeds: [UInt64] =
            environment["RESOURCEKIT_SEED"].flatMap(UInt64.init).map { [$0] }
            ?? (0..<schedules).map { _ in UInt64.random(in: 1..<(1 << 40)) }
        for seed in seeds {
            let broken = try await run(seed: seed)
            #expect(broken.isEmpty, "seed \(seed): \(broken)")
            if !broken.isEmpty { return }
        }
    }

    /// An edit made in a schedule: by whom, of which post, and the token it wrote (a delete's is empty).
    struct Edit {
        var device: Int
        var id: String
        var token: String
    }

    private func run(seed: UInt64) async throws -> [String] {
        var random = SeededGenerator(state: seed)
        let ids = ["1", "2"]
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(ids.map { Post(id: $0, title: "title \($0)", body: "body \($0)") }, into: "posts")
        let devices = ["A", "B", "C"].prefix(2 + Int(random.next() % 2)).map { name in
            Device(name, backend: backend, policy: Self.policies[Int(random.next() % 4)])
        }
        defer { for device in devices { try? FileManager.default.removeItem(at: device.directory) } }
        for device in devices {
            try device.launch(ids: ids)
            for (index, resource) in device.resources.enumerated() { try await resource.read(ids[index]) }
        }
        var log: [String] = []
        var edits: [Edit] = []
        var broken: [String] = []
        func fail(_ what: String) { broken.append("\(what) after \(log.joined(separator: "; "))") }

        for _ in 0..<30 {
            let which = Int(clamping: random.next() % UInt64(devices.count))
            let device = devices[which]
            let index = Int(clamping: random.next() % UInt64(ids.count))
            let id = ids[index]
            let resource = device.resources[index]
            switch random.next() % 100 {
            case 0..<30:
                // An edit of one field of what the device shows.
                guard let shown = resource.value else { continue }
                let token = "\(device.name)\(edits.count)"
                var edited = shown
                if random.next() % 2 == 0 { edited.title = token } else { edited.body = token }
                log.append("\(device.name) edits \(id) to \(token)")
                edits.append(Edit(device: which, id: id, token: token))
                _ = try? await resource.update(edited, optimistic: edited)
                // A conflict found online is resolved by a replay the change started: wait for it.
                await device.outbox.replay()
            case 30..<38:
                // The same, through the feed, on the item it shows.
                guard let shown = device.feed.items.first(where: { $0.id == id }) else { continue }
                let token = "\(device.name)\(edits.count)"
                var edited = shown
                if random.next() % 2 == 0 { edited.title = token } else { edited.body = token }
                log.append("\(device.name) edits \(id) to \(token) in its feed")
                edits.append(Edit(device: which, id: id, token: token))
                _ = try? await device.feed.update(edited, optimistic: edited)
                await device.outbox.replay()
            case 38..<44:
                // A feed's page: the items, without validators.
                log.append("\(device.name) refreshes its feed")
                _ = try? await device.feed.refresh()
            case 44..<50:
                // A push of what the server holds now (the device need not be online for it to arrive late).
                let server = try backend.records(Post.self, in: "posts").first { $0.id == id }
                log.append("\(device.name) is pushed \(server.map { "\($0)" } ?? "the deletion of \(id)")")
                device.store.apply(server.map { .updated($0) } ?? .deleted(id), as: RemotePost.self)
            case 50..<54:
                guard let shown = resource.value else { continue }
                log.append("\(device.name) deletes \(id)")
                edits.append(Edit(device: which, id: id, token: ""))
                _ = try? await resource.delete(shown, optimistic: true)
                await device.outbox.replay()
            case 54..<58:
                log.append("\(device.name) will lose its next write's answer")
                device.link.losesNextAnswer.withLock { $0 = true }
            case 58..<66:
                let offline = device.link.offline.withLock { state in
                    state.toggle()
                    return state
                }
                log.append("\(device.name) \(offline ? "offline" : "online")")
            case 66..<80:
                log.append("\(device.name) replays")
                await device.outbox.replay()
            case 80..<88:
                log.append("\(device.name) restarts")
                try await device.restart(ids: ids)
            default:
                guard let held = device.outbox.held.first else { continue }
                let resolution = resolution(of: held, random: &random)
                log.append("\(device.name) resolves \(held.change.itemID) with \(resolution)")
                _ = try await device.outbox.resolve(held.id, with: resolution)
            }
            // No write reached the server without naming what it was made on.
            for device in devices {
                for write in device.link.taken.withLock({ $0 }) where !write.conditional {
                    fail("\(device.name) wrote \(write.method) \(write.path) unconditionally")
                }
            }
            if !broken.isEmpty { return broken }
        }

        // Everyone online; replay and resolve until nothing is left (each round resolves at least the first
        // held change of each device).
        for device in devices { device.link.offline.withLock { $0 = false } }
        for _ in 0..<20 {
            for device in devices {
                await device.outbox.replay()
                for held in device.outbox.held {
                    let resolution = resolution(of: held, random: &random)
                    log.append("\(device.name) resolves \(held.change.itemID) with \(resolution)")
                    _ = try await device.outbox.resolve(held.id, with: resolution)
                }
            }
            if devices.allSatisfy({ $0.outbox.pending.isEmpty }) { break }
        }
        for device in devices {
            try await device.collect()
            if !device.outbox.pending.isEmpty { fail("\(device.name) still keeps \(device.outbox.pending)") }
        }

        // Each policy did what it says.
        for device in devices {
            for report in device.conflicts {
                switch report.resolution {
                case nil where device.policy.1 != "hold" && report.error == nil:
                    fail("\(device.name) (\(device.policy.1)) held \(report) without a reason")
                case let resolution? where !resolution.description.hasPrefix(device.policy.1):
                    fail("\(device.name) (\(device.policy.1)) resolved \(report) otherwise")
                default: break
                }
                if report.theirs(as: Post.self) == nil, !report.isDeletedOnServer {
                    fail("\(device.name) reported \(report) without the server's value")
                }
            }
        }
        // Every edit reached the server, or was reported. (A deletion of an item someone else deleted has
        // landed without a write: the item is gone, as it asked.)
        let remaining = Set(try backend.records(Post.self, in: "posts").map(\.id))
        for edit in edits {
            let device = devices[edit.device]
            let writes = device.link.taken.withLock { $0 }
            let reached =
                edit.token.isEmpty
                ? writes.contains { $0.method == "DELETE" && $0.path.hasSuffix("/\(edit.id)") }
                    || !remaining.contains(edit.id)
                : writes.contains { $0.body?.title == edit.token || $0.body?.body == edit.token }
            let reported =
                device.conflicts.contains { report in
                    report.change.itemID == edit.id
                        && (edit.token.isEmpty
                            ? report.change.kind == .delete
                            : [report.mine(as: Post.self)?.title, report.mine(as: Post.self)?.body].contains(edit.token))
                }
                || device.failures.contains { $0.change.itemID == edit.id }
            if !reached, !reported {
                fail("\(device.name)'s edit \(edit.token.isEmpty ? "delete" : edit.token) of \(edit.id) was lost")
            }
        }
        // Every holder agrees with the server once it reads again.
        let server = try backend.records(Post.self, in: "posts")
        for device in devices {
            for (index, id) in ids.enumerated() {
                guard let expected = server.first(where: { $0.id == id }) else { continue }
                let read = try? await device.resources[index].read(id)
                if read != expected || device.resources[index].value != expected {
                    fail(
                        "\(device.name) shows \(id) as \(String(describing: device.resources[index].value)), the server \(expected)"
                    )
                }
            }
            let listed = try? await device.feed.refresh()
            if listed != server || device.feed.items != server {
                fail("\(device.name)'s feed shows \(device.feed.items), the server \(server)")
            }
        }
        return broken
    }

    /// A resolution the app could choose for a held conflict: keep the server's, keep mine, or a merge.
    private func resolution(of held: OutboxConflict, random: inout SeededGenerator) -> ConflictResolution {
        // An update cannot bring back an item the server deleted: the app keeps the deletion.
        if held.isDeletedOnServer, held.change.kind == .update { return .keepServer }
        switch random.next() % 3 {
        case 0: return .keepServer
        case 1: return .keepMine
        default:
            guard let mine = held.mine(as: Post.self), let theirs = held.theirs(as: Post.self),
                let merged = try? mergeFields(held.base(as: Post.self), mine, theirs)
            else { return .keepMine }
            return .use(merged)
        }
    }
}
