// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit

func makeStore(session: NetworkSession, userID: String, under base: URL) throws -> ResourceStore {
    let directory = base.appendingPathComponent("store/\(userID)")  // one directory per user
    let persistence = StorePersistence(storage: try FileEntryStorage(directory: directory))
    return ResourceStore(session: session, persistence: persistence)
}
