import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitPocketBase
import ResourceKitTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The outbox against a real PocketBase of its own: halted while the app makes changes, started again after
/// the app restarted.
@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(3)))
struct PocketBaseOutboxTests {
    @Test func editsAndADeleteMadeWhileTheServerIsDownLandOnceEachAfterTheAppRestarts() async throws {
        let instance = "outbox-\(UInt32.random(in: 0...UInt32.max))"
        let url = try await runScript(["Scripts/pocketbase", "start", "--instance", instance, "--seed", "20"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pb-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try await offlineEdits(url: url, instance: instance, directory: directory)
        } catch {
            _ = try? await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
            throw error
        }
        _ = try await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
    }

    /// Two launches of an app, each its own process (the test binary as a ``ChildProcess``): the first edits
    /// while the server is halted and ends; the second starts while it is still halted, shows the edits, and
    /// replays once the server is back.
    private func offlineEdits(url: String, instance: String, directory: URL) async throws {
        struct Auth: Decodable { var token: String }
        struct Credentials: Encodable { var identity: String, password: String }
        let plain = NetworkSession(
            baseURL: url + "/api", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)))
        let token = try await plain.send(
            Endpoint(
                .post, "collections/_superusers/auth-with-password",
                body: .json(
                    Credentials(
                        identity: PocketBase.environment["POCKETBASE_EMAIL"] ?? "",
                        password: PocketBase.environment["POCKETBASE_PASSWORD"] ?? ""))), as: Auth.self
        ).token
        let before = try await plain.send(
            Endpoint(.get, "collections/posts/records", query: ["sort": "position", "perPage": "50"]),
            as: PageEnvelope<PBPost>.self
        ).items

        // The first launch: loads, then edits while the server is halted, and ends.
        let first = try ChildApp(["pb-edit", directory.path, url, token])
        let loaded = try await first.line(after: "loaded ")
        let ids = loaded.split(separator: " ").map(String.init)
        #expect(ids == before.prefix(3).map(\.id))
        guard ids.count == 3 else { return }
        _ = try await runScript(["Scripts/pocketbase", "halt", "--instance", instance])
        first.send("halted")
        var queued: [String] = []
        for _ in 0..<4 { queued.append(try await first.line(after: "queued ")) }
        _ = try await first.line(after: "done")
        // Tried and kept: the changes not behind another of their item (the second edit of the first post
        // waited behind the first without being tried).
        let paths = [ids[0], ids[1], ids[0], ids[2]].map { "/api/collections/posts/records/\($0)" }
        #expect(
            first.lines.filter { $0.hasPrefix("sent ") }.map { $0.split(separator: " ")[1] } == [
                "PATCH", "PATCH", "DELETE",
            ])
        #expect(try await first.exitStatus() == 0)

        // The app restarts, a new process, the server still halted: the edits show before any request.
        let second = try ChildApp(["pb-replay", directory.path, url, token, ids.joined(separator: ",")])
        #expect(try await second.line(after: "pending ") == queued.joined(separator: " "))
        #expect(try await second.line(after: "shows \(ids[0]) ") == "offline edit 3 | offline edit 3")
        #expect(try await second.line(after: "shows \(ids[1]) ") == "offline edit 2 | offline edit 2")
        #expect(try await second.line(after: "shows \(ids[2]) ") == "nothing | absent")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS'Z'"
        // From now: every earlier request (the setup, the seeding, the loads) has ended, and the server's log
        // dates a request by its end, on this machine's clock.
        let since = formatter.string(from: Date())
        _ = try await runScript(["Scripts/pocketbase", "resume", "--instance", instance])
        second.send("resumed")
        #expect(try await second.line(after: "left ") == "0")
        _ = try await second.line(after: "done")
        #expect(try await second.exitStatus() == 0)
        // Sent once each, in order, each with the key it was kept under.
        let sent = second.lines.filter { $0.hasPrefix("sent ") }.map { $0.split(separator: " ").map(String.init) }
        #expect(sent.map { $0[1] } == ["PATCH", "PATCH", "PATCH", "DELETE"])
        #expect(sent.map { $0[2] } == paths)
        #expect(sent.map { $0[3] } == queued)

        // The server's own records: exactly those changes.
        let server = try await plain.send(
            Endpoint(.get, "collections/posts/records", query: ["sort": "position", "perPage": "50"]),
            as: PageEnvelope<PBPost>.self
        ).items
        #expect(server.count == 19)
        #expect(server.first { $0.id == ids[0] }?.title == "offline edit 3")
        #expect(server.first { $0.id == ids[1] }?.title == "offline edit 2")
        #expect(!server.contains { $0.id == ids[2] })
        #expect(server.dropFirst(2).map(\.title) == before.dropFirst(3).map(\.title))
        // The server's request log: each change handled once (two of the first post), nothing else written.
        let handled = try await serverWrites(plain, token: token, since: since, expected: 4)
        #expect(handled.sorted() == paths.map { "\($0.hasSuffix(ids[2]) ? "DELETE" : "PATCH") \($0)" }.sorted())
        // Every holder of the second launch agrees with the server.
        #expect(second.lines.contains("after \(ids[0]) offline edit 3"))
        #expect(second.lines.contains("after \(ids[1]) offline edit 2"))
        #expect(second.lines.contains("after \(ids[2]) nothing"))
    }

    /// The writes PocketBase's request log holds since `since` (`METHOD /path`), waiting up to 20 s for the
    /// server to write its batch of logs.
    private func serverWrites(_ plain: NetworkSession, token: String, since: String, expected: Int) async throws
        -> [String]
    {
        struct Data: Decodable {
            var method: String?
            var url: String?
        }
        struct Entry: Decodable { var data: Data }
        struct Page: Decodable { var items: [Entry] }
        let endpoint = Endpoint(
            .get, "logs",
            query: ["filter": "created>='\(since)' && data.type='request'", "sort": "created", "perPage": "200"],
            headers: ["Authorization": token])
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        var writes: [String] = []
        // lint-waits: PocketBase writes its request logs in the background and signals nothing; read them again.
        while clock.now < deadline {
            let page: Page = try await plain.send(endpoint)
            writes = page.items.compactMap { entry in
                guard let method = entry.data.method, method != "GET", let url = entry.data.url else { return nil }
                return "\(method) \(url.split(separator: "?").first.map(String.init) ?? url)"
            }
            if writes.count >= expected { break }
            try await clock.sleep(for: .milliseconds(500))
        }
        return writes
    }
}

/// An app launch in a process of its own (the test binary as a ``ChildProcess``): what it prints, line by
/// line, and lines sent to it; every wait is bounded.
final class ChildApp {
    private let process: Process
    private let input = Pipe()
    private let output = Pipe()
    private let received = Locked<[String]>([])
    /// Whether the reading thread still reads.
    private let reading = Locked(true)
    /// Whether the child has ended.
    private let ended = Locked(false)
    /// Where the next `line(after:)` looks from.
    private var cursor = 0

    init(_ arguments: [String]) throws {
        process = ChildProcess.make(arguments)
        process.standardInput = input
        process.standardOutput = output
        let handle = output.fileHandleForReading
        let received = received
        let reading = reading
        let ended = ended
        // Each line and the end raise `Changes`, which the waits below wake on.
        process.terminationHandler = { _ in
            ended.withLock { $0 = true }
            Changes.raise()
        }
        // A thread of its own reads the child's output as it comes, until it ends.
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending += chunk
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
                    pending = Data(pending[(end + 1)...])
                    received.withLock { $0.append(line) }
                    Changes.raise()
                }
            }
            reading.withLock { $0 = false }
            Changes.raise()
        }
        try process.run()
    }

    deinit { if process.isRunning { process.terminate() } }

    /// Every line so far.
    var lines: [String] { received.withLock { $0 } }

    /// The rest of the next line (after the last one returned) that starts with `prefix`, waiting for it; fails
    /// when the child's output ends first, or after two minutes.
    func line(after prefix: String) async throws -> String {
        var found: Int?
        let cursor = cursor
        let reading = reading
        do {
            try await Changes.wait("the child prints \"\(prefix)…\"", timeout: .seconds(120)) {
                let lines = lines
                found = lines.indices.dropFirst(cursor).first { lines[$0].hasPrefix(prefix) }
                return found != nil || !reading.withLock { $0 }
            }
        } catch {
            throw WaitError(description: "\(error); the child printed \(lines)")
        }
        guard let index = found else {
            throw WaitError(description: "the child ended without printing \"\(prefix)…\"; it printed \(lines)")
        }
        self.cursor = index + 1
        return String(lines[index].dropFirst(prefix.count))
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Its exit status, waiting up to two minutes for it to end.
    func exitStatus() async throws -> Int32 {
        let ended = ended
        do {
            try await Changes.wait("the child ends", timeout: .seconds(120)) { ended.withLock { $0 } }
        } catch {
            throw WaitError(description: "\(error)")
        }
        return process.terminationStatus
    }
}
