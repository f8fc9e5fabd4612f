// Writes entries to a FileEntryStorage in a loop until it is killed, printing "ack <generation> <keys…>" on
// standard output once each batch is stored. PersistenceCrashTests kills it with SIGKILL at random moments
// and checks what survived. Arguments: the directory, a seed.
//
// With a third argument `outbox`, it makes changes through a store whose server is unreachable instead, and
// prints "queued <id>" once each is kept in the outbox (the call threw `.queued`).
import Foundation
import ResourceKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The value of `key` at `generation`: its generation, then bytes only that pair makes, of a length
/// between 8 and about 6 KB, so that a torn or mixed file cannot pass for a right one.
func payload(key: Int, generation: Int) -> Data {
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

struct Note: Codable, Sendable, Identifiable {
    var id: Int
    var text: String
}

struct RemoteNote: Readable, Updatable {
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

/// Keeps changes in the outbox until killed.
func keepChanges(in directory: URL, seed: UInt64) async throws {
    let persistence = StorePersistence(
        storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
        outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox"), maximumBytes: .max))
    let store = ResourceStore(
        session: NetworkSession(baseURL: "http://127.0.0.1:9/api", transport: Unreachable()), persistence: persistence)
    store.queueWhenOffline(RemoteNote.self)
    var random = seed
    var counter = 0
    while true {
        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let note = Note(id: Int(random >> 61), text: "\(seed)-\(counter)")
        counter += 1
        let resource = store.resource(RemoteNote.self, id: note.id)
        let result: Result<Note, NetworkError>
        do {
            result = .success(try await resource.update(note, optimistic: note))
        } catch {
            result = .failure(error)
        }
        guard case .failure(let error) = result, let id = error.queuedChange else {
            FileHandle.standardError.write(Data("the change was not kept: \(result)\n".utf8))
            exit(3)
        }
        FileHandle.standardOutput.write(Data("queued \(id)\n".utf8))
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let seed = UInt64(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: PersistenceCrashChild DIRECTORY SEED [outbox]\n".utf8))
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
        generation = max(
            generation, Int(entry.value.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }) + 1)
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
