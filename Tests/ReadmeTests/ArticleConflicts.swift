// Code blocks of ResourceKitPersistence.docc/OfflineConflicts.md, verbatim; ReadmeTests checks them.
import Foundation
import ResourceKit
import ResourceKitPersistence

struct Note: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
    var updated: String  // set by the server on every write
}

struct RemoteNote: Readable, Updatable, Deletable {
    typealias Value = Note
    typealias ReadRequest = String
    typealias DeleteRequest = Note
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes/records").appending(id: id) }
    static func updateEndpoint(for note: Note) -> Endpoint {
        Endpoint(.patch, "notes/records", body: .json(note)).appending(id: note.id)
    }
    static func deleteEndpoint(for note: Note) -> Endpoint { Endpoint(.delete, "notes/records").appending(id: note.id) }
    static func version(of note: Note) -> ItemVersion? { ItemVersion(note.updated) }
}

func makeNotesStore(session: NetworkSession, under directory: URL) throws -> ResourceStore {
    let persistence = StorePersistence(
        storage: try FileEntryStorage(directory: directory.appendingPathComponent("entries")),
        outbox: try FileEntryStorage(directory: directory.appendingPathComponent("outbox")),
        queueWhenOffline: [
            // PocketBase: read and compare versions before each replayed change. Held for the app by default.
            .resources(RemoteNote.self, detection: .versionCheck)
        ])
    return ResourceStore(session: session, persistence: persistence)
}

/// One row of a "your version / their version" screen.
struct NoteConflictRow: Identifiable {
    let id: String
    let yours: Note?  // nil: you deleted it
    let theirs: Note?  // nil: it was deleted on the server
}

func conflictRows(in outbox: Outbox) -> [NoteConflictRow] {
    outbox.held.map { conflict in
        NoteConflictRow(id: conflict.id, yours: conflict.mine(as: Note.self), theirs: conflict.theirs(as: Note.self))
    }
}

/// The user's choice: their version, yours, or both (your title on their text).
func choose(_ row: NoteConflictRow, keepYours: Bool, mergeTitle: Bool, in outbox: Outbox) async throws {
    if mergeTitle, let yours = row.yours, var merged = row.theirs {
        merged.title = yours.title
        try await outbox.resolve(row.id, with: .use(merged))
    } else {
        try await outbox.resolve(row.id, with: keepYours ? .keepMine : .keepServer)
    }
}

/// Shows a badge with the number of conflicts waiting for the user, as they are found and resolved.
func watchConflicts(of outbox: Outbox, show: @escaping @Sendable (Int) -> Void) -> Task<Void, Never> {
    Task {
        for await pending in outbox.changes() { show(pending.filter(\.isHeld).count) }
    }
}
