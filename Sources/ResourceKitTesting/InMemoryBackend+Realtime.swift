public import ResourceKit

#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// A client of the backend's realtime API: its stream and the topics it asked for.
struct RealtimeClient {
    var writer: ResponseBody.Writer
    var topics: [String] = []
}

/// A write that the realtime clients hear of.
struct RealtimeChange {
    var collection: String
    var id: String
    var action: String
    var record: [String: JSONValue]
}

extension InMemoryBackend {
    /// Serves PocketBase's realtime API at `path` (`/api/realtime` for PocketBase's layout), so that
    /// `PocketBaseRealtime` runs against this backend as against a server.
    ///
    /// - `GET path` (read with `NetworkSession.bytes(_:)` or `events(_:)`) opens an event stream whose first
    ///   event is `PB_CONNECT`, with a new client id.
    /// - `POST path` with `{"clientId", "subscriptions"}` replaces that client's topics (`204`; no
    ///   `subscriptions` clears them; `404` for an unknown client; `400` for a body without a `clientId`).
    /// - Each create, update and delete, by any request, sends `{"record", "action"}` to every client with a
    ///   matching topic, as PocketBase names them: `posts` or `posts/*` for the collection, `posts/<id>` for
    ///   one record (updates and deletes only). The event's name is the topic. There are no access rules.
    /// - ``dropRealtimeConnections()`` ends every stream, as a server restart does.
    /// - Parameter path: The realtime endpoint's URL path.
    public func serveRealtime(at path: String = "/api/realtime") {
        let path = path.hasPrefix("/") ? path : "/" + path
        state.withLock { $0.realtimePath = path }
    }

    /// Ends every realtime stream and forgets its client, as a restarted server does: clients reconnect and
    /// get new ids.
    public func dropRealtimeConnections() {
        let clients = state.withLock { state in
            defer { state.realtimeClients = [:] }
            return Array(state.realtimeClients.values)
        }
        for client in clients { client.writer.finish() }
        Changes.raise()
    }

    /// How many realtime clients are connected.
    public var realtimeClientCount: Int { state.withLock { $0.realtimeClients.count } }

    /// The topics of every connected realtime client, sorted: what the server would send events for.
    public var realtimeSubscriptions: [[String]] {
        state.withLock { state in state.realtimeClients.values.map { $0.topics.sorted() } }.sorted {
            $0.lexicographicallyPrecedes($1)
        }
    }

    /// Like ``send(_:)``, but the realtime endpoint answers with its event stream as it comes.
    public func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        // A streamed body (a file, a form with files) is read here, so that stubs and the log see its bytes.
        let request = try request.readingBodyStream()
        let parsed = ParsedRequest(request)
        // The realtime connection is a request like any: it is not made while the backend is unreachable, and it
        // takes the next fault and the latency.
        let realtime = state.withLock { state -> (reachable: Bool, fault: Fault.Kind?, latency: Duration)? in
            guard parsed.method == .get, let path = state.realtimePath, parsed.recorded.path == path else {
                return nil
            }
            guard state.isReachable else { return (false, nil, .zero) }
            state.log.append(parsed.recorded)
            return (true, state.takeFault(), state.latency)
        }
        guard let realtime else {
            let response = try await send(request)
            return StreamedResponse(
                statusCode: response.statusCode, headers: response.headers, url: response.url,
                body: ResponseBody(response.body))
        }
        guard realtime.reachable else {
            throw .transport(code: .notConnectedToInternet, message: "the in-memory backend is unreachable")
        }
        Changes.raise()
        var delay = min(realtime.latency, RealTimeLimit.longest)
        if case .slowBody(let extra) = realtime.fault { delay += min(max(extra, .zero), RealTimeLimit.longest) }
        if delay > .zero { try await wait(delay, timeout: request.timeoutInterval) }
        if Task.isCancelled { throw .cancelled }
        switch realtime.fault {
        case .status(let code):
            let response = Self.error(code, "Injected failure.", url: request.url)
            return StreamedResponse(
                statusCode: response.statusCode, headers: response.headers, url: request.url,
                body: ResponseBody(response.body))
        case .dropConnection:
            throw .transport(code: .networkConnectionLost, message: "the server closed the connection before answering")
        case .malformedBody:
            return StreamedResponse(
                statusCode: 200, headers: ["Content-Type": "text/event-stream"], url: request.url,
                body: ResponseBody(Data("<html>this is not an event stream".utf8)))
        case .truncatedBody:
            let (body, writer) = ResponseBody.makeStream()
            _ = writer.yield(Data("id:".utf8))
            writer.finish(throwing: .transport(code: .networkConnectionLost, message: "the connection was cut"))
            return StreamedResponse(
                statusCode: 200, headers: ["Content-Type": "text/event-stream"], url: request.url, body: body)
        case .slowBody, nil:
            break
        }
        let (body, writer) = ResponseBody.makeStream()
        let clientID = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        // Registered only while reachable: a stream opened as the backend goes away is cut with the others.
        let registered = state.withLock { state in
            guard state.isReachable else { return false }
            state.realtimeClients[clientID] = RealtimeClient(writer: writer)
            return true
        }
        guard registered else {
            throw .transport(code: .notConnectedToInternet, message: "the in-memory backend is unreachable")
        }
        Changes.raise()
        writer.onTermination { [weak self] in
            self?.state.withLock { _ = $0.realtimeClients.removeValue(forKey: clientID) }
            Changes.raise()
        }
        _ = writer.yield(Data("id:\(clientID)\nevent:PB_CONNECT\ndata:{\"clientId\":\"\(clientID)\"}\n\n".utf8))
        return StreamedResponse(
            statusCode: 200, headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-store"],
            url: request.url, body: body)
    }

    /// The answer to a subscription post, or `nil` for a request that is not one.
    func answerRealtime(_ request: ParsedRequest, in state: inout State) -> HTTPResponse? {
        guard request.method == .post, let path = state.realtimePath, request.recorded.path == path else { return nil }
        struct Subscriptions: Decodable {
            var clientId: String
            var subscriptions: [String]?
        }
        guard let body = request.body, let asked = try? JSONDecoder().decode(Subscriptions.self, from: body) else {
            return Self.error(400, "Something went wrong while processing your request.")
        }
        guard state.realtimeClients[asked.clientId] != nil else {
            return Self.error(404, "Missing or invalid client id.")
        }
        state.realtimeClients[asked.clientId]?.topics = asked.subscriptions ?? []
        return HTTPResponse(statusCode: 204)
    }

    /// Sends each change to the clients whose topics match it.
    func publishRealtime(_ changes: [RealtimeChange]) {
        let clients = state.withLock { Array($0.realtimeClients) }
        for change in changes {
            guard
                let data = try? JSONEncoder().encode(
                    JSONValue.object(["record": .object(change.record), "action": .string(change.action)]))
            else { continue }
            let text = String(decoding: data, as: UTF8.self)
            for (clientID, client) in clients {
                for topic in client.topics {
                    let base = topic.prefix { $0 != "?" }
                    let matches =
                        base == change.collection || base == "\(change.collection)/*"
                        || (change.action != "create" && base == "\(change.collection)/\(change.id)")
                    guard matches else { continue }
                    _ = client.writer.yield(Data("id:\(clientID)\nevent:\(topic)\ndata:\(text)\n\n".utf8))
                }
            }
        }
    }
}
