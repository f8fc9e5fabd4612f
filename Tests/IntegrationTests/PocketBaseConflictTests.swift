import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitPocketBase
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A note of the test server's `notes` collection, whose `updated` field PocketBase sets on every write.
struct PBNote: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
    var updated: String
}

/// Notes, versioned by their `updated` field: what PocketBase's version check compares.
struct RemotePBNote: Readable, Updatable, Deletable {
    typealias Value = PBNote
    typealias ReadRequest = String
    typealias DeleteRequest = PBNote
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes/records").appending(id: id) }
    static func updateEndpoint(for note: PBNote) -> Endpoint {
        Endpoint(.patch, "notes/records", body: .json(Fields(title: note.title, body: note.body))).appending(
            id: note.id)
    }
    static func deleteEndpoint(for note: PBNote) -> Endpoint {
        Endpoint(.delete, "notes/records").appending(id: note.id)
    }
    static func version(of note: PBNote) -> ItemVersion? { ItemVersion(note.updated) }

    /// What an edit sends: the server sets `updated`.
    struct Fields: Encodable {
        var title: String
        var body: String
    }
}

/// Device A's way to PocketBase: cut while it is "on a train", and a log of what it sent.
final class TrainLink: HTTPTransport {
    let base = URLSessionTransport(timeout: .seconds(45))
    let cut = Locked(false)
    let sent = Locked<[String]>([])
    /// Whether the next write's answer is lost: PocketBase takes it, the device sees the connection go.
    let losesNextWrite = Locked(false)

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        if cut.withLock({ $0 }) { throw .transport(code: .notConnectedToInternet, message: "on a train") }
        let path = request.url?.path.split(separator: "/").last.map(String.init) ?? ""
        sent.withLock { $0.append("\(request.httpMethod ?? "") \(path)") }
        let response = try await base.send(request)
        if request.httpMethod != "GET",
            losesNextWrite.withLock({ loses in
                defer { loses = false }
                return loses
            })
        {
            throw .transport(code: .networkConnectionLost, message: "the train went into a tunnel")
        }
        return response
    }
}

/// Device A edits a post offline, device B edits the same post online, A comes back: against a real PocketBase,
/// which honours no precondition, the conflict is found by the version check, and each policy does what it
/// says, in the number of requests the docs give.
@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(3)))
struct PocketBaseConflictTests {
    /// A fresh note for one case, made by B.
    func makeNote(_ b: NetworkSession) async throws -> PBNote {
        try await b.send(
            Endpoint(.post, "notes/records", body: .json(RemotePBNote.Fields(title: "Shared", body: "Shared body"))),
            as: PBNote.self)
    }

    /// A store of device A's, on a directory of its own, through `link`.
    func deviceA(
        _ link: TrainLink, token: String, directory: URL, conflicts: ConflictPolicy<PBNote>,
        detection: ConflictDetection = .versionCheck, conditionalWhenOnline: Bool = false
    ) throws -> ResourceStore {
        let session = NetworkSession(
            baseURL: (PocketBase.url ?? "") + "/api/collections", validation: PocketBaseValidation(), transport: link,
            adapters: [
                RequestAdapter { request in
                    var request = request
                    request.setValue(token, forHTTPHeaderField: "Authorization")
                    return request
                }
            ])
        let persistence = StorePersistence(
            storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
            outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
            queueWhenOffline: [
                .resources(
                    RemotePBNote.self, conflicts: conflicts, detection: detection,
                    conditionalWhenOnline: conditionalWhenOnline)
            ])
        return ResourceStore(session: session, persistence: persistence)
    }

    /// Runs the story with A's `conflicts` policy; returns the server's post, A's outbox and resource, and what A
    /// sent from the moment it came back.
    func story(
        _ conflicts: ConflictPolicy<PBNote>, detection: ConflictDetection = .versionCheck
    ) async throws -> (server: PBNote, store: ResourceStore, post: Resource<RemotePBNote>, sent: [String]) {
        let b = try await PocketBase.authenticated()
        let token = try await PocketBase.token()
        let shared = try await makeNote(b)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pb-conflict-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = TrainLink()
        let store = try deviceA(link, token: token, directory: directory, conflicts: conflicts, detection: detection)
        let post = store.resource(RemotePBNote.self, id: shared.id)
        try await post.read(shared.id)
        // On the train: A's edit is kept.
        link.cut.withLock { $0 = true }
        var mine = shared
        mine.title = "A's title"
        #expect(try await post.update(mine, optimistic: mine) == mine)
        #expect(store.outbox?.pending.count == 1)
        // B edits the same post online.
        var theirs = shared
        theirs.body = "B's body"
        _ = try await b.send(RemotePBNote.updateEndpoint(for: theirs), as: PBNote.self)
        // A is back.
        link.cut.withLock { $0 = false }
        link.sent.withLock { $0 = [] }
        await store.outbox?.replay()
        let server = try await b.send(RemotePBNote.readEndpoint(for: shared.id), as: PBNote.self)
        _ = try? await b.send(RemotePBNote.deleteEndpoint(for: shared))
        return (server, store, post, link.sent.withLock { $0 })
    }

    @Test func byDefaultTheConflictIsHeldAndShownAndTheServerKeepsBsEdit() async throws {
        let (server, store, post, sent) = try await story(.hold)
        let id = post.value?.id ?? ""
        // One read, the version check; nothing written.
        #expect(sent == ["GET \(id)"])
        #expect(server.title == "Shared")
        #expect(server.body == "B's body")
        let held = try #require(store.outbox?.held.first)
        #expect(held.mine(as: PBNote.self)?.title == "A's title")
        #expect(held.theirs(as: PBNote.self)?.body == "B's body")
        #expect(held.base(as: PBNote.self)?.body == "Shared body")
        #expect(post.value?.title == "A's title")
    }

    @Test func mergeSendsBothEdits() async throws {
        let (server, store, post, sent) = try await story(
            .merge { base, mine, theirs in
                var merged = theirs
                if mine.title != base?.title { merged.title = mine.title }
                if mine.body != base?.body { merged.body = mine.body }
                return merged
            })
        let id = server.id
        // The check that finds the conflict, the check of the merged change, its write.
        #expect(sent == ["GET \(id)", "GET \(id)", "PATCH \(id)"])
        #expect(server.title == "A's title")
        #expect(server.body == "B's body")
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.value == server)
    }

    @Test func keepMineSendsAsEditKnowingly() async throws {
        let (server, store, post, sent) = try await story(.keepMine)
        let id = server.id
        #expect(sent == ["GET \(id)", "GET \(id)", "PATCH \(id)"])
        #expect(server.title == "A's title")
        #expect(server.body == "Shared body")
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(post.value == server)
    }

    /// B makes a note; device A, holding its changes (with the version check, on a directory of its own), reads
    /// it. The caller removes the directory.
    func readNote(conditionalWhenOnline: Bool) async throws -> (
        b: NetworkSession, shared: PBNote, directory: URL, link: TrainLink, store: ResourceStore,
        post: Resource<RemotePBNote>
    ) {
        let b = try await PocketBase.authenticated()
        let token = try await PocketBase.token()
        let shared = try await makeNote(b)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pb-conflict-\(UUID().uuidString)")
        let link = TrainLink()
        let store = try deviceA(
            link, token: token, directory: directory, conflicts: .hold, conditionalWhenOnline: conditionalWhenOnline)
        let post = store.resource(RemotePBNote.self, id: shared.id)
        try await post.read(shared.id)
        return (b, shared, directory, link, store, post)
    }

    /// Online, with the version check: A's edit, made after B's without A reading it, is not sent over it.
    @Test func onlineTheVersionCheckKeepsAsEditFromOverwritingBs() async throws {
        let (b, shared, directory, link, store, post) = try await readNote(conditionalWhenOnline: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var theirs = shared
        theirs.body = "B's body"
        _ = try await b.send(RemotePBNote.updateEndpoint(for: theirs), as: PBNote.self)
        link.sent.withLock { $0 = [] }
        var mine = shared
        mine.title = "A's title"
        #expect(try await post.update(mine, optimistic: mine) == mine)
        await store.outbox?.replay()
        // The check before the write, the replay's check: nothing written.
        #expect(link.sent.withLock { $0 } == ["GET \(shared.id)", "GET \(shared.id)"])
        let server = try await b.send(RemotePBNote.readEndpoint(for: shared.id), as: PBNote.self)
        _ = try? await b.send(RemotePBNote.deleteEndpoint(for: shared))
        #expect(server.body == "B's body")
        #expect(server.title == "Shared")
        #expect(store.outbox?.held.first?.mine(as: PBNote.self)?.title == "A's title")
        #expect(post.value?.title == "A's title")
    }

    /// A's write reaches PocketBase but its answer is lost: the next replay's check finds the version moved by
    /// A's own write, sees the edit on the server, and lands the change, not a conflict with A itself.
    @Test func aChangeWhoseAnswerWasLostLandsOnTheNextReplayNotAsAConflictWithItself() async throws {
        let (b, shared, directory, link, store, post) = try await readNote(conditionalWhenOnline: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        link.cut.withLock { $0 = true }
        var mine = shared
        mine.title = "A's title"
        #expect(try await post.update(mine, optimistic: mine) == mine)
        link.cut.withLock { $0 = false }
        link.losesNextWrite.withLock { $0 = true }
        link.sent.withLock { $0 = [] }
        await store.outbox?.replay()
        #expect(link.sent.withLock { $0 } == ["GET \(shared.id)", "PATCH \(shared.id)"])
        #expect(store.outbox?.pending.count == 1)
        link.sent.withLock { $0 = [] }
        await store.outbox?.replay()
        let server = try await b.send(RemotePBNote.readEndpoint(for: shared.id), as: PBNote.self)
        _ = try? await b.send(RemotePBNote.deleteEndpoint(for: shared))
        // The check alone: the server holds A's edit, so nothing is written again and nothing is held.
        #expect(link.sent.withLock { $0 } == ["GET \(shared.id)"])
        #expect(server.title == "A's title")
        #expect(store.outbox?.pending.isEmpty == true)
        #expect(store.outbox?.held.isEmpty == true)
        #expect(post.value == server)
    }

    /// Why PocketBase needs the version check: it ignores `If-Match`, and B's edit is overwritten.
    @Test func withPreconditionsAlonePocketBaseOverwritesBsEdit() async throws {
        let (server, store, _, sent) = try await story(.hold, detection: .preconditions)
        let id = server.id
        #expect(sent == ["PATCH \(id)"])
        #expect(server.title == "A's title")
        #expect(server.body == "Shared body")
        #expect(store.outbox?.pending.isEmpty == true)
    }
}
