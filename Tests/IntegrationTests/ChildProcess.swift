import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitPocketBase
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A process of its own for the tests that kill one or launch an app twice: the test binary itself, run with
/// the arguments in `RESOURCEKIT_CHILD` and a filter that selects only ``ChildProcessEntry``. (A separate
/// executable target would be one more product every user's package lists.)
///
/// With `DIRECTORY SEED`, it writes entries to a FileEntryStorage in a loop until it is killed, printing
/// "ack <generation> <keys…>" on standard output once each batch is stored. PersistenceCrashTests kills it
/// with SIGKILL at random moments and checks what survived. With a third argument `outbox`, it makes changes
/// through a store whose server is unreachable instead, and prints "queued <id>" once each is kept in the
/// outbox (the call returned the optimistic value, and the change is new in the outbox).
///
/// `pb-edit DIRECTORY URL TOKEN` and `pb-replay DIRECTORY URL TOKEN IDS` are the two launches of an app against
/// a PocketBase that PocketBaseOutboxTests halts between them (see `pocketBaseEdits` and `pocketBaseReplay`).
/// Standard output carries only these lines: Swift Testing writes its own to standard error, which the parent
/// discards.
enum ChildProcess {
    /// The child's arguments, when this process is one.
    static let arguments: [String]? = ProcessInfo.processInfo.environment["RESOURCEKIT_CHILD"].map {
        $0.components(separatedBy: "\n")
    }

    /// A child process with `arguments`, ready to run: its standard error goes nowhere.
    static func make(_ arguments: [String]) -> Process {
        let process = Process()
        process.executableURL = executable
        // After the arguments that select the tests' bundle (on Darwin the host's; see Platform.testCommand).
        process.arguments =
            Platform.testCommand.arguments + ["--testing-library", "swift-testing", "--filter", "ChildProcessEntry"]
        var environment = ProcessInfo.processInfo.environment
        environment["RESOURCEKIT_CHILD"] = arguments.joined(separator: "\n")
        process.environment = environment
        process.standardError = FileHandle.nullDevice
        return process
    }

    /// What runs the tests: on Linux the test binary, the executable `ResourceKitPackageTests.xctest`; on Darwin
    /// the host that loads their bundle (`swiftpm-testing-helper`).
    static var executable: URL { Platform.testCommand.executable }

    /// The value of `key` at `generation`: its generation, then bytes only that pair makes, of a length
    /// between 8 and about 6 KB, so that a torn or mixed file cannot pass for a right one.
    static func payload(key: Int, generation: Int) -> Data {
        var state = UInt64(truncatingIfNeeded: key &* 1_000_003 &+ generation &* 7_919)
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var bytes = withUnsafeBytes(of: Int64(generation).littleEndian) { Array($0) }
        for _ in 0..<Int(next() % 6_000) { bytes.append(UInt8(truncatingIfNeeded: next())) }
        return Data(bytes)
    }

    /// The generation a value of ``payload(key:generation:)`` starts with (clamped into an `Int`, which has 32 bits
    /// on some platforms, should a damaged value hold more).
    static func generation(of value: Data) -> Int {
        Int(clamping: value.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: Int64.self) })
    }

    struct Note: Codable, Sendable, Identifiable {
        var id: Int
        var text: String
    }

    struct RemoteNote: Readable, Updatable, PersistedResource {
        typealias Value = Note
        typealias ReadRequest = Int
        static let persistenceName = "Note"
        static func readEndpoint(for id: Int) -> Endpoint { Endpoint(.get, "notes").appending(id: id) }
        static func updateEndpoint(for note: Note) -> Endpoint {
            Endpoint(.patch, "notes", body: .json(note)).appending(id: note.id)
        }
    }

    struct Unreachable: HTTPTransport {
        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            throw .transport(code: .notConnectedToInternet, message: "offline")
        }
    }

    /// Answers a note's read, with `ETag: "n<id>"`, and nothing else: every change is kept, on a known base.
    /// While `conflicts` is set, it answers a write `412` with the note someone else wrote: a replay then holds
    /// the change in a conflict.
    struct ReadsOnly: HTTPTransport {
        final class Switch: Sendable {
            let isOn = Atomic(false)
        }

        var conflicts = Switch()

        static func entityTag(of id: String) -> String { "\"n\(id)\"" }

        func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
            if conflicts.isOn.load(ordering: .relaxed), request.httpMethod == "PATCH",
                let id = request.url?.lastPathComponent,
                let body = try? JSONEncoder().encode(Note(id: Int(id) ?? -1, text: "theirs"))
            {
                return HTTPResponse(
                    statusCode: 412, headers: ["ETag": "\"t\(id)\"", "Content-Type": "application/json"], body: body,
                    url: request.url)
            }
            guard request.httpMethod == "GET", let id = request.url?.lastPathComponent,
                let body = try? JSONEncoder().encode(Note(id: Int(id) ?? -1, text: "server"))
            else { throw .transport(code: .notConnectedToInternet, message: "offline") }
            return HTTPResponse(
                statusCode: 200,
                headers: [
                    "ETag": Self.entityTag(of: id), "Last-Modified": "Tue, 01 Dec 2026 00:00:00 GMT",
                    "Content-Type": "application/json",
                ], body: body, url: request.url)
        }
    }

    /// Keeps changes in the outbox until killed.
    static func keepChanges(in directory: URL, seed: UInt64) async throws {
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: [.resources(RemoteNote.self)])
        let transport = ReadsOnly()
        let store = ResourceStore(
            session: NetworkSession(baseURL: "http://127.0.0.1:9/api", transport: transport),
            persistence: persistence)
        var random = seed
        var counter = 0
        while true {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let note = Note(id: Int(random >> 61), text: "\(seed)-\(counter)")
            counter += 1
            let resource = store.resource(RemoteNote.self, id: note.id)
            // Read first, so that the change has a base: the server's value and its validators.
            guard (try? await resource.read(note.id)) != nil else {
                FileHandle.standardError.write(Data("the read failed\n".utf8))
                exit(3)
            }
            let before = Set(store.outbox?.pending.map(\.id) ?? [])
            let result: Result<Note, NetworkError>
            do {
                result = .success(try await resource.update(note, optimistic: note))
            } catch {
                result = .failure(error)
            }
            // Kept durably, the call returns the optimistic value: the kept change is the one new in the outbox.
            let added = (store.outbox?.pending ?? []).filter { !before.contains($0.id) }
            guard case .success(let shown) = result, shown.text == note.text, added.count == 1,
                let id = added.first?.id
            else {
                FileHandle.standardError.write(Data("the change was not kept: \(result)\n".utf8))
                exit(3)
            }
            say("queued \(id)")
            // Now and then the server is back, and someone else has changed every note: the replay holds the
            // kept changes in conflicts (killed in the middle of it, too).
            if random >> 58 & 3 == 0 {
                transport.conflicts.isOn.store(true, ordering: .relaxed)
                await store.outbox?.replay()
                transport.conflicts.isOn.store(false, ordering: .relaxed)
            }
        }
    }

    // MARK: Against PocketBase

    /// A post as the app launches keep it (`PBPost` and the feed, `RemotePBPosts`, are the integration tests').
    struct RemotePBPost: Readable, Updatable, Deletable, PersistedResource {
        typealias Value = PBPost
        typealias ReadRequest = String
        typealias DeleteRequest = PBPost
        static let persistenceName = "PBPost"
        static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts/records").appending(id: id) }
        static func updateEndpoint(for post: PBPost) -> Endpoint {
            Endpoint(.patch, "posts/records", body: .json(post)).appending(id: post.id)
        }
        static func deleteEndpoint(for post: PBPost) -> Endpoint {
            Endpoint(.delete, "posts/records").appending(id: post.id)
        }
    }

    /// Records each write as it leaves: method, path, `Idempotency-Key`.
    final class SentWrites: RequestAdapting, Sendable {
        func adapt(_ request: URLRequest) async throws(NetworkError) -> URLRequest {
            if let method = request.httpMethod, method != "GET" {
                let key = request.value(forHTTPHeaderField: "Idempotency-Key") ?? "-"
                ChildProcess.say("sent \(method) \(request.url?.path ?? "") \(key)")
            }
            return request
        }
    }

    static func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    /// Waits for the parent's next line on standard input.
    static func awaitLine(_ expected: String) {
        while let line = readLine() {
            if line == expected { return }
        }
        exit(4)
    }

    static func pocketBaseStore(_ directory: URL, url: String, token: String) throws -> ResourceStore {
        let session = NetworkSession(
            baseURL: url + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(10)),
            adapters: [BearerTokenAdapter(token: token), SentWrites()])
        let store = ResourceStore(
            session: session,
            persistence: StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
                queueWhenOffline: [.resources(RemotePBPost.self)])
        )
        return store
    }

    /// The first launch: loads the feed and three posts, then (once the parent says the server is halted) edits
    /// the first twice and the second once, deletes the third, and ends.
    static func pocketBaseEdits(_ directory: URL, url: String, token: String) async throws {
        let store = try pocketBaseStore(directory, url: url, token: token)
        let feed = store.list(RemotePBPosts.self)
        let posts = try await feed.loadFirstPage()
        let resources = posts.prefix(3).map { store.resource(RemotePBPost.self, id: $0.id) }
        for (resource, post) in zip(resources, posts) { try await resource.read(post.id) }
        await store.persistence?.flush()
        say("loaded \(posts.prefix(3).map(\.id).joined(separator: " "))")
        awaitLine("halted")
        var changes: [(Resource<RemotePBPost>, PBPost?)] = []
        for (index, title) in [(0, "offline edit 1"), (1, "offline edit 2"), (0, "offline edit 3")] {
            var edited = posts[index]
            edited.title = title
            changes.append((resources[index], edited))
        }
        changes.append((resources[2], nil))
        for (resource, edited) in changes {
            let before = Set(store.outbox?.pending.map(\.id) ?? [])
            let result: Result<PBPost?, NetworkError>
            do {
                if let edited {
                    result = .success(try await resource.update(edited, optimistic: edited))
                } else {
                    result = .success(try await resource.delete(posts[2], optimistic: true))
                }
            } catch {
                result = .failure(error)
            }
            // Kept, the call returns what the change shows: the edit, or nothing for the deletion.
            let added = (store.outbox?.pending ?? []).filter { !before.contains($0.id) }
            guard case .success(let shown) = result, shown == edited, added.count == 1, let id = added.first?.id
            else {
                say("not kept: \(result)")
                exit(5)
            }
            say("queued \(id)")
        }
        await store.persistence?.flush()
        say("done")
    }

    /// The second launch, in a new process: says what it shows before any request, then (once the parent says
    /// the server is back) replays and ends.
    static func pocketBaseReplay(_ directory: URL, url: String, token: String, ids: [String]) async throws {
        let store = try pocketBaseStore(directory, url: url, token: token)
        let feed = store.list(RemotePBPosts.self)
        let resources = ids.map { store.resource(RemotePBPost.self, id: $0) }
        say("pending \((store.outbox?.pending ?? []).map(\.id).joined(separator: " "))")
        for (id, resource) in zip(ids, resources) {
            let listed = feed.items.first { $0.id == id }?.title ?? "absent"
            say("shows \(id) \(resource.state.value?.title ?? "nothing") | \(listed)")
        }
        awaitLine("resumed")
        await store.outbox?.replay()
        say("left \(store.outbox?.pending.count ?? -1)")
        for (id, resource) in zip(ids, resources) { say("after \(id) \(resource.state.value?.title ?? "nothing")") }
        say("done")
    }

    /// Runs as the child: `arguments` as the executable's arguments were (the first is a placeholder).
    static func run(_ arguments: [String]) async throws -> Never {
        if arguments.count >= 5, arguments[1] == "pb-edit" {
            try await pocketBaseEdits(URL(fileURLWithPath: arguments[2]), url: arguments[3], token: arguments[4])
            exit(0)
        }
        if arguments.count >= 6, arguments[1] == "pb-replay" {
            try await pocketBaseReplay(
                URL(fileURLWithPath: arguments[2]), url: arguments[3], token: arguments[4],
                ids: arguments[5].split(separator: ",").map(String.init))
            exit(0)
        }
        guard arguments.count >= 3, let seed = UInt64(arguments[2]) else {
            FileHandle.standardError.write(Data("usage: DIRECTORY SEED [outbox]\n".utf8))
            exit(2)
        }
        if arguments.count >= 4, arguments[3] == "outbox" {
            try await keepChanges(in: URL(fileURLWithPath: arguments[1]), seed: seed)
        }
        let storage = try FileEntryStorage(directory: URL(fileURLWithPath: arguments[1]), maximumBytes: 1 << 30)
        // Generations go on from the newest stored, so that each run's writes are new values.
        var generation = 1
        for key in try storage.allKeys() {
            if let entry = try storage.entry(for: key), entry.value.count >= 8 {
                generation = max(generation, Self.generation(of: entry.value) + 1)
            }
        }
        var random = seed
        while true {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let count = Int(random >> 60) % 4 + 1
            var keys: Set<Int> = []
            var draw = random
            while keys.count < count {
                draw = draw &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                keys.insert(Int(draw >> 59) % 16)
            }
            let entries = keys.sorted().map { key in
                PersistedEntry(key: "item-\(key)", value: payload(key: key, generation: generation), loadedAt: Date())
            }
            try storage.store(entries)
            // Written straight to the descriptor, unbuffered: once the line is out, the parent can count on it.
            FileHandle.standardOutput.write(
                Data("ack \(generation) \(keys.sorted().map(String.init).joined(separator: " "))\n".utf8))
            generation += 1
        }
    }
}

/// The child's entry: runs only in a process ``ChildProcess/make(_:)`` started, and ends it.
@Suite struct ChildProcessEntry {
    @Test(.enabled(if: ChildProcess.arguments != nil, "runs only as a child process"))
    func runAsChild() async throws {
        try await ChildProcess.run(["child"] + (ChildProcess.arguments ?? []))
    }
}
