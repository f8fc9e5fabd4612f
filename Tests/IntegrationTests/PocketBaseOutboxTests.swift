import Foundation
import ResourceKit
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The outbox against a real PocketBase of its own: halted while the app makes changes, started again after
/// the app restarted.
@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(3)))
struct PocketBaseOutboxTests {
    /// What the app sent: method, path and `Idempotency-Key` of each write, as it left.
    final class SentWrites: Sendable {
        let writes = Mutex<[(method: String, path: String, key: String?)]>([])
        var all: [(method: String, path: String, key: String?)] { writes.withLock { $0 } }
    }

    @Test func editsAndADeleteMadeWhileTheServerIsDownLandOnceEachAfterARestart() async throws {
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

    /// One launch of the app: a new session (logged in as the superuser, which may write posts) and a store on
    /// the same directories, with `RemotePBPost` kept offline.
    private func launch(url: String, token: String, directory: URL, sent: SentWrites) throws -> ResourceStore {
        let session = NetworkSession(
            baseURL: url + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(10)),
            adapters: [
                RequestAdapter { request in
                    var request = request
                    request.setValue(token, forHTTPHeaderField: "Authorization")
                    if let method = request.httpMethod, method != "GET" {
                        let write = (
                            method, request.url?.path ?? "", request.value(forHTTPHeaderField: "Idempotency-Key")
                        )
                        sent.writes.withLock { $0.append(write) }
                    }
                    return request
                }
            ])
        let store = ResourceStore(
            session: session,
            persistence: StorePersistence(
                storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
                outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
        )
        store.queueWhenOffline(RemotePBPost.self)
        return store
    }

    private func offlineEdits(url: String, instance: String, directory: URL) async throws {
        struct Auth: Decodable { var token: String }
        struct Credentials: Encodable { var identity: String, password: String }
        let plain = NetworkSession(
            baseURL: url + "/api", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(10)))
        let token = try await plain.send(
            Endpoint(
                .post, "collections/_superusers/auth-with-password",
                body: .json(
                    Credentials(
                        identity: PocketBase.environment["POCKETBASE_EMAIL"] ?? "",
                        password: PocketBase.environment["POCKETBASE_PASSWORD"] ?? ""))), as: Auth.self
        ).token
        let sent = SentWrites()
        var pendingIDs: [String] = []
        var posts: [PBPost] = []
        do {
            let store = try launch(url: url, token: token, directory: directory, sent: sent)
            let feed = store.list(RemotePBPosts.self)
            posts = try await feed.loadFirstPage()
            #expect(posts.count == 20)
            for post in posts.prefix(3) { try await store.resource(RemotePBPost.self, id: post.id).read(post.id) }
            await store.persistence?.flush()

            _ = try await runScript(["Scripts/pocketbase", "halt", "--instance", instance])
            // Three edits (two of the first post) and a delete, while the server is down.
            let first = store.resource(RemotePBPost.self, id: posts[0].id)
            let second = store.resource(RemotePBPost.self, id: posts[1].id)
            let doomed = store.resource(RemotePBPost.self, id: posts[2].id)
            var edit = posts[0]
            edit.title = "offline edit 1"
            var other = posts[1]
            other.title = "offline edit 2"
            var again = posts[0]
            again.title = "offline edit 3"
            for (resource, value) in [(first, edit), (second, other), (first, again)] {
                do {
                    try await resource.update(value, optimistic: value)
                    Issue.record("the server answered while halted")
                } catch {
                    #expect(error.code == .queued, "\(error)")
                }
            }
            do {
                try await doomed.delete(posts[2], optimistic: true)
                Issue.record("the server answered while halted")
            } catch {
                #expect(error.code == .queued, "\(error)")
            }
            #expect(first.state.value?.title == "offline edit 3")
            #expect(feed.items.prefix(2).map(\.title) == ["offline edit 3", "offline edit 2"])
            #expect(!feed.items.contains { $0.id == posts[2].id })
            pendingIDs = store.outbox?.pending.map(\.id) ?? []
            #expect(pendingIDs.count == 4)
            // Tried, failed to connect, kept: all but the second edit of the first post, which waited behind
            // the first without being tried.
            #expect(sent.all.map(\.method) == ["PATCH", "PATCH", "DELETE"])
            #expect(
                sent.all.map(\.path)
                    == [posts[0], posts[1], posts[2]].map { "/api/collections/posts/records/\($0.id)" })
            sent.writes.withLock { $0 = [] }
        }

        // The app is launched again (new session, new store, the same directories), then the server comes back.
        let store = try launch(url: url, token: token, directory: directory, sent: sent)
        #expect(store.outbox?.pending.map(\.id) == pendingIDs)
        let first = store.resource(RemotePBPost.self, id: posts[0].id)
        let second = store.resource(RemotePBPost.self, id: posts[1].id)
        let feed = store.list(RemotePBPosts.self)
        #expect(first.state.value?.title == "offline edit 3")
        #expect(second.state.value?.title == "offline edit 2")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS'Z'"
        let since = formatter.string(from: Date().addingTimeInterval(-1))
        _ = try await runScript(["Scripts/pocketbase", "resume", "--instance", instance])
        await store.outbox?.replay()
        #expect(store.outbox?.pending.isEmpty == true)

        // Sent once each, in order, each with its own key: the keys the outbox listed.
        #expect(sent.all.map(\.method) == ["PATCH", "PATCH", "PATCH", "DELETE"])
        #expect(sent.all.map(\.key) == pendingIDs.map { Optional($0) })
        let paths = [posts[0], posts[1], posts[0], posts[2]].map { "/api/collections/posts/records/\($0.id)" }
        #expect(sent.all.map(\.path) == paths)

        // The server's own records: exactly those changes.
        let server = try await plain.send(
            Endpoint(.get, "collections/posts/records", query: ["sort": "position", "perPage": "50"]),
            as: PageEnvelope<PBPost>.self
        ).items
        #expect(server.count == 19)
        #expect(server.first { $0.id == posts[0].id }?.title == "offline edit 3")
        #expect(server.first { $0.id == posts[1].id }?.title == "offline edit 2")
        #expect(!server.contains { $0.id == posts[2].id })
        let untouched = server.filter { ![posts[0].id, posts[1].id].contains($0.id) }
        #expect(untouched.map(\.title) == posts.dropFirst(3).map(\.title))

        // The server's request log: each change handled once (two of the first post), nothing else written.
        let handled = try await serverWrites(plain, token: token, since: since, expected: 4)
        #expect(handled.sorted() == paths.map { "\($0.hasSuffix(posts[2].id) ? "DELETE" : "PATCH") \($0)" }.sorted())

        // Every holder agrees with the server.
        #expect(first.state.value == server.first { $0.id == posts[0].id })
        #expect(second.state.value == server.first { $0.id == posts[1].id })
        #expect(store.resource(RemotePBPost.self, id: posts[2].id).state.value == nil)
        #expect(try await feed.loadFirstPage() == server)
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
