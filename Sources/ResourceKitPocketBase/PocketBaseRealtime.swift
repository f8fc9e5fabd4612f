import Foundation
public import ResourceKit
public import ResourceKitEventStream

/// PocketBase's realtime API as a live source for a store: every create, update and delete of the followed
/// collections, pushed over server-sent events, shows in the store's resources and lists with no request.
///
/// ```swift
/// let realtime = PocketBaseRealtime(session: api)        // a session whose base URL ends in /api
///     .following(RemotePost.self, collection: "posts")
/// let live = Task { try await realtime.run(in: store) }
/// ```
///
/// - Connection: `GET realtime` as a stream of events (`NetworkSession/events(_:lastEventID:reconnect:maximumEventSize:onOpen:onStatus:)`,
///   so it reconnects after a lost connection and after PocketBase's idle close, every 5 minutes without
///   events). Each connection's `PB_CONNECT` event names its client id.
/// - Subscriptions: `POST realtime` with the client id and the topics of what the store holds: `posts/*` for a
///   collection some live list holds items of, else `posts/<id>` for each record a live resource holds, and
///   nothing for a collection nobody holds. They follow the store: a resource or list made or freed posts the
///   new set (each post replaces the whole set on the server). Past 200 records of one collection, the source
///   follows the whole collection, and past 1,000 topics in all (PocketBase takes at most 1,000 topics a
///   client) it follows whole the collections with the most records until they fit. A post that fails is tried
///   again, waiting as `ReconnectPolicy` says, and stops the source with its error after
///   `ReconnectPolicy/maximumAttempts` failed posts in a row, except for a lost client and a refusal. A lost client (a
///   `404`: the server no longer knows the client id, as when the stream reached another server behind a load
///   balancer, or the server restarted) drops the stream and connects again at once, for a new client id whose
///   post follows; lost again before a connection opens, it waits as `ReconnectPolicy` says, and past its
///   `ReconnectPolicy/maximumAttempts` the source stops with the `404`. A refusal (a `4xx` other than 404,
///   408 or 429, such as credentials that changed) stops the source with that error. The post carries the session's credentials, so
///   the server's list and view rules decide what arrives: PocketBase checks the subscriber's rights per
///   record.
/// - Changes: `create`, `update` and `delete` events go to `ResourceStore/apply(_:as:)`, ordered by the
///   versions (`RemoteResource/version(of:)`; return PocketBase's `updated` field) of the type, or of another
///   type of the same value the store knows. An event whose
///   record does not decode as the type's value is skipped.
/// - Status: `onStatus` is told, in order, on a task of the source's own:
///   - `opened` when a connection has its client id and its subscriptions landed, numbered from 1 among the
///     connections told open (a connection whose stream ends before its subscriptions land is never told open,
///     though `onOpen`, which counts client ids, counts it);
///   - `closed`, once, for each connection told open, with what ended it: the stream's error (`nil` for an end
///     of its body), the `404` of a client the server forgot, or what stopped the source;
///   - `reconnecting` with the wait before the next attempt and what made it; its `failures` counts the lost
///     clients in a row after a lost client (the first wait is zero), or else the stream's failed attempts in
///     a row since the source's last new stream;
///   - last, before `run` returns, `finished` with the error `run` throws, or with none when `run` returns (the
///     server ended the stream with a `204`).
///
///   `reconnecting` and `finished` carry the number of connections told open so far.
/// - Gaps: PocketBase does not replay what a client missed, so after each reconnection (once the new
///   subscriptions are posted) the store revalidates, once, the observed holders of every followed type.
public struct PocketBaseRealtime: LiveSource {
    let session: NetworkSession
    let path: String
    let reconnect: ReconnectPolicy
    let onOpen: (@Sendable (Int) -> Void)?
    let onStatus: (@Sendable (EventStreamStatus) -> Void)?
    var followed: [Followed] = []

    /// Creates the source.
    /// - Parameters:
    ///   - session: The session for the realtime endpoint, with the credentials whose rights decide what
    ///     arrives; its base URL is PocketBase's `/api`.
    ///   - path: The realtime endpoint's path under the base URL.
    ///   - reconnect: When to connect again after a lost connection.
    ///   - onOpen: Called each time a connection has its client id and subscriptions, with its number among
    ///     the client ids the server gave (1 for the first); for tests.
    ///   - onStatus: Called with each change of the connection, in order, on a task of the source's own: what an
    ///     app shows of it ("live", "reconnecting in 5 s", "offline"). See the type's "Status".
    public init(
        session: NetworkSession, path: String = "realtime", reconnect: ReconnectPolicy = .standard,
        onOpen: (@Sendable (Int) -> Void)? = nil, onStatus: (@Sendable (EventStreamStatus) -> Void)? = nil
    ) {
        self.session = session
        self.path = path
        self.reconnect = reconnect
        self.onOpen = onOpen
        self.onStatus = onStatus
    }

    /// The source, also following `collection`, whose records are `Remote`'s values. A collection followed as
    /// several types sends its events to each.
    /// - Parameters:
    ///   - type: The remote type of the collection's records: the value of its resources, the item of its lists.
    ///   - collection: The collection's name (or id), as PocketBase's topics spell it.
    /// - Returns: The source.
    public func following<Remote: RemoteResource>(_ type: Remote.Type, collection: String) -> PocketBaseRealtime
    where Remote.Value: Decodable & Identifiable, Remote.Value.ID: Sendable & LosslessStringConvertible {
        var copy = self
        copy.followed.append(
            Followed(
                collection: collection,
                topics: { store in
                    let holders = store.liveHolders(of: Remote.self)
                    // PocketBase takes at most 1,000 topics a client: past a few hundred records, the collection.
                    if holders.hasLists || holders.ids.count > Self.recordTopicLimit { return ["\(collection)/*"] }
                    return holders.ids.map { "\(collection)/\($0.description)" }
                },
                apply: { store, data, decoder in
                    let event = try decoder.decode(Event<Remote.Value>.self, from: data)
                    switch event.action {
                    case "create": store.apply(.created(event.record), as: Remote.self)
                    case "update": store.apply(.updated(event.record), as: Remote.self)
                    case "delete": store.apply(.deleted(event.record.id), as: Remote.self)
                    default: break
                    }
                },
                resync: { store in await store.invalidate(Remote.self) }))
        return copy
    }

    /// Runs the source until the calling task is cancelled, or until the server ends the stream: a `204`, or
    /// connections that keep ending before any event until `ReconnectPolicy/maximumAttempts` (then it returns).
    /// - Parameter store: The store whose holders show the changes.
    /// - Throws: `NetworkError/cancelled` once cancelled; the stream's error when it cannot reconnect (a
    ///   status other than those it retries, or `ReconnectPolicy/maximumAttempts` failed attempts); a
    ///   subscription post's refusal (a `4xx` other than 404, 408 and 429); or the `404` of a lost client when
    ///   the client is lost `ReconnectPolicy/maximumAttempts` times in a row before a connection opens.
    public func run(in store: ResourceStore) async throws(NetworkError) {
        // Statuses are decided under the connection's lock, from whichever task learns of them, and told in that
        // order by one task, never under a lock.
        var delivery: Task<Void, Never>?
        var statuses: AsyncStream<EventStreamStatus>.Continuation?
        if let onStatus {
            let (stream, continuation) = AsyncStream.makeStream(of: EventStreamStatus.self)
            statuses = continuation
            delivery = Task { for await status in stream { onStatus(status) } }
        }
        let connection = Connection(statuses: statuses)
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let result: Result<Void, NetworkError> = await withTaskGroup(of: Result<Void, NetworkError>?.self) { group in
            group.addTask {
                for await _ in store.membershipChanges() { signal.yield() }
                return nil
            }
            group.addTask {
                for await _ in signals {
                    // A post that failed for another reason than a lost client is tried again, backing off as
                    // the stream's reconnections do, until it lands or the source stops; one the server refuses
                    // (a 4xx: bad credentials, too many topics) stops the source with its error.
                    var failures = 0
                    while true {
                        let outcome = await synchronize(store, connection)
                        if case .refused(let error) = outcome { return .failure(error) }
                        guard case .retry(let error) = outcome else { break }
                        failures += 1
                        // `ReconnectPolicy/maximumAttempts` failed posts in a row stop the source, as failed
                        // connections do.
                        guard reconnect.allowsAttempt(afterFailures: failures) else { return .failure(error) }
                        let wait = reconnect.wait(afterFailures: failures, base: reconnect.initialDelay)
                        do { try await session.sleep(for: wait) } catch { return nil }
                    }
                }
                return nil
            }
            group.addTask {
                do throws(NetworkError) {
                    try await read(into: store, connection, signal: signal)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            let first = await group.next() ?? nil
            // What the cancelled tasks tell on their way out is not what ended the source.
            connection.stopRelaying()
            group.cancelAll()
            signal.finish()
            return first ?? .failure(.cancelled)
        }
        if case .failure(let error) = result {
            connection.finish(error)
        } else {
            connection.finish(nil)
        }
        await delivery?.value
        try result.get()
    }

    /// Reads the event stream, connecting again whenever the server forgets the client (a subscription post
    /// answered `404`), backing off as ``reconnect`` says when that happens several times in a row.
    private func read(into store: ResourceStore, _ connection: Connection, signal: AsyncStream<Void>.Continuation)
        async throws(NetworkError)
    {
        var lostInARow = 0
        while true {
            let stream = Task { () async -> Result<Void, NetworkError> in
                do throws(NetworkError) {
                    try await readStream(into: store, connection, signal: signal)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            let result = await withTaskCancellationHandler {
                connection.reading(stream)
                return await stream.value
            } onCancel: {
                stream.cancel()
            }
            guard let lost = connection.takeLost(), !Task.isCancelled else { return try result.get() }
            // The client the server forgot: its stream is dropped, and a new one gets a new client id.
            lostInARow = connection.wasOpenedSinceLost ? 1 : lostInARow + 1
            guard reconnect.allowsAttempt(afterFailures: lostInARow) else { throw lost }
            let wait =
                lostInARow > 1 ? reconnect.wait(afterFailures: lostInARow - 1, base: reconnect.initialDelay) : .zero
            connection.reconnecting(after: wait, failures: lostInARow, error: lost)
            if lostInARow > 1 {
                do { try await session.sleep(for: wait) } catch { throw .cancelled }
            }
        }
    }

    /// Reads one event stream (which reconnects by itself after a lost connection): client ids to the
    /// connection, changes to the store.
    private func readStream(
        into store: ResourceStore, _ connection: Connection, signal: AsyncStream<Void>.Continuation
    ) async throws(NetworkError) {
        let decoder = session.configuration.decoder
        // Every type that follows a collection gets its events.
        let collections = Dictionary(grouping: followed, by: \.collection)
        let relay: (@Sendable (EventStreamStatus) -> Void)? =
            onStatus == nil ? nil : { @Sendable status in connection.relay(status) }
        for try await event in session.events(Endpoint(.get, path), reconnect: reconnect, onStatus: relay) {
            if event.type == "PB_CONNECT" {
                struct Connect: Decodable { var clientId: String }
                guard let connect = try? decoder.decode(Connect.self, from: Data(event.data.utf8)) else { continue }
                connection.connected(connect.clientId)
                signal.yield()
                continue
            }
            // The event's name is the topic it answers: `posts/*`, `posts/<id>`, perhaps with `?options=`.
            let collection = event.type.prefix { $0 != "/" && $0 != "?" }
            for follow in collections[String(collection)] ?? [] {
                try? follow.apply(store, Data(event.data.utf8), decoder)
            }
        }
    }

    /// Posts the topics of what the store holds, when they or the client changed; after a reconnection,
    /// revalidates what is observed, once.
    private func synchronize(_ store: ResourceStore, _ connection: Connection) async -> SyncOutcome {
        let topics = topics(of: store)
        guard let (clientID, number, needsPost) = connection.pending(topics) else { return .done }
        if needsPost {
            struct Subscriptions: Encodable, Sendable {
                var clientId: String
                var subscriptions: [String]
            }
            let body = Subscriptions(clientId: clientID, subscriptions: topics)
            do throws(NetworkError) {
                _ = try await session.response(for: Endpoint(.post, path, body: .json(body)))
            } catch {
                connection.postFailed(clientID)
                // A lost client (404): the stream is dropped and connects again, and the new client's post
                // follows. A cancelled source stops.
                if error.statusCode == 404 {
                    connection.lost(clientID, error)
                    return .done
                }
                if error.code == .cancelled || Task.isCancelled { return .done }
                if let status = error.statusCode, (400..<500).contains(status), status != 408, status != 429 {
                    return .refused(error)
                }
                return .retry(error)
            }
            connection.posted(topics, for: clientID)
        }
        guard connection.opened(clientID, number) else { return .done }
        onOpen?(number)
        if number > 1 {
            await withTaskGroup(of: Void.self) { group in
                for follow in followed { group.addTask { await follow.resync(store) } }
            }
        }
        return .done
    }

    /// How a synchronization ended.
    enum SyncOutcome {
        case done
        case retry(NetworkError)
        case refused(NetworkError)
    }

    /// The most records of one collection followed one by one; past it, the whole collection is.
    static let recordTopicLimit = 200
    /// The most topics PocketBase takes from a client.
    static let topicLimit = 1000

    /// The topics of what the store holds: each collection's, within PocketBase's limit overall. While they
    /// are more, the collection with the most records followed one by one is followed whole instead.
    func topics(of store: ResourceStore) -> [String] {
        var groups: [String: Set<String>] = [:]
        for follow in followed { groups[follow.collection, default: []].formUnion(follow.topics(store)) }
        var total = groups.values.reduce(0) { $0 + $1.count }
        while total > Self.topicLimit,
            let (collection, topics) = groups.filter({ $0.value != ["\($0.key)/*"] })
                .max(by: { ($0.value.count, $1.key) < ($1.value.count, $0.key) })
        {
            groups[collection] = ["\(collection)/*"]
            total -= topics.count - 1
        }
        return groups.values.flatMap { $0 }.sorted()
    }

    /// One followed collection, its type erased.
    struct Followed: Sendable {
        var collection: String
        var topics: @Sendable (ResourceStore) -> [String]
        var apply: @Sendable (ResourceStore, Data, JSONDecoder) throws -> Void
        var resync: @Sendable (ResourceStore) async -> Void
    }

    struct Event<Record: Decodable>: Decodable {
        var action: String
        var record: Record
    }
}
