import ResourceKit
import ResourceKitPocketBase
import Testing

/// A file that imports ResourceKit and ResourceKitPocketBase only, as the Live data article's PocketBase code
/// does: the event-stream types the realtime source takes and tells (`ReconnectPolicy`, `EventStreamStatus`)
/// come with it, so it compiles without `import ResourceKitEventStream`.
@Suite struct PocketBaseImportTests {
    func shown(_ status: EventStreamStatus) -> String {
        switch status.kind {
        case .opened: "live"
        case .reconnecting: "reconnecting in \(status.delay ?? .zero)"
        case .finished: "offline"
        default: "…"
        }
    }

    @Test func theRealtimeSourcesTypesComeWithItsModule() {
        let session = NetworkSession(baseURL: "http://127.0.0.1:1/api")
        let realtime = PocketBaseRealtime(
            session: session, reconnect: ReconnectPolicy(initialDelay: .seconds(2), jitter: .none),
            onStatus: { _ in })
        _ = realtime.following(RemoteNote.self, collection: "notes")
        #expect(shown(EventStreamStatus(kind: .opened, connection: 1)) == "live")
        #expect(
            shown(EventStreamStatus(kind: .reconnecting, connection: 1, delay: .seconds(5)))
                == "reconnecting in 5.0 seconds")
        #expect(shown(EventStreamStatus(kind: .closed, connection: 1)) == "…")
    }
}

struct Note: Codable, Sendable, Identifiable {
    var id: String
}

struct RemoteNote: Readable {
    typealias Value = Note
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes").appending(id: id) }
}
