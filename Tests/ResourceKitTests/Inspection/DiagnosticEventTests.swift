import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A diagnostic event as one comparable line: its kind and the properties tests pin down (not durations).
func line(_ event: DiagnosticEvent) -> String {
    var parts = [event.kind.name]
    if let object = event.object { parts.append(object) }
    if let method = event.method { parts.append(method) }
    if let url = event.url { parts.append(url) }
    if let attempt = event.attempt { parts.append("attempt \(attempt)") }
    if let status = event.status { parts.append("status \(status)") }
    if event.notModified { parts.append("not modified") }
    if let previous = event.previousStateSummary, let state = event.stateSummary {
        parts.append("\(previous) → \(state)")
    }
    if let callers = event.callers { parts.append("callers \(callers)") }
    if let itemType = event.itemType, let count = event.itemCount { parts.append("\(count) \(itemType)") }
    if let receivers = event.receivers { parts.append("receivers \(receivers)") }
    if event.delay != nil { parts.append("delayed") }
    if let error = event.error { parts.append("error \(error.code)") }
    return parts.joined(separator: " | ")
}

/// Every event a stream holds up to a marker request (`GET …/marker`) sent after the operation under test:
/// events are emitted, in order, before an operation returns, so the marker's first event closes the set.
func eventsUntilMarker(
    _ stream: DiagnosticEvents, session: NetworkSession, describe: (DiagnosticEvent) -> String = line
) async -> [String] {
    // Any answer will do, or none: its `requestStarted` is emitted before the transport is called.
    try? await session.send(Endpoint(.get, "marker", timeLimit: .milliseconds(1)))
    var result: [String] = []
    for await event in stream {
        if event.url?.hasSuffix("/marker") == true { break }
        result.append(describe(event))
    }
    return result
}

@Suite(.timeLimit(.minutes(1))) struct DiagnosticEventTests {
    let post = Post(id: "1", title: "One")
    let url = "http://test.local/api/posts/1"

    @Test func aReadEmitsItsStatesAndItsRequest() async throws {
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics()
        _ = try await resource.read("1")
        #expect(
            await eventsUntilMarker(events, session: session) == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "requestFinished | GET | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    @Test func aCoalescedReadShowsEveryCallerJoiningOneRequest() async throws {
        let inFlight = try await ReadInFlight()
        let (transport, session, resource, events, first) = (
            inFlight.transport, inFlight.session, inFlight.resource, inFlight.events, inFlight.first
        )
        let second = Task { try await resource.read("1") }
        try await waitUntil("2 callers") { resource.waitingCallerCount == 2 }
        let third = Task { try await resource.read("1") }
        try await waitUntil("3 callers") { resource.waitingCallerCount == 3 }
        transport.answer(0, json: json(post))
        for task in [first, second, third] { #expect(try await task.value == post) }
        #expect(transport.requestCount == 1)
        #expect(
            await eventsUntilMarker(events, session: session) == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "joined | Resource<RemotePost> | callers 2",
                "joined | Resource<RemotePost> | callers 3",
                "requestFinished | GET | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 3",
            ])
    }

    @Test func aRetriedReadShowsEachAttempt() async throws {
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api",
            transport: ScriptedTransport([.status(503), .status(200, json: json(post))]),
            retry: RetryPolicy(initialDelay: .seconds(1), jitter: .none), clock: clock)
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics()
        let read = Task { try await resource.read("1") }
        // The retry's wait, by its length: the session's deadline timer sleeps on the same clock, so a count of
        // sleepers could be that timer alone, and a second moved then would leave the retry waiting for ever.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        #expect(try await read.value == post)
        #expect(
            await eventsUntilMarker(events, session: session) == [
                "stateChanged | Resource<RemotePost> | idle → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "requestFinished | GET | \(url) | attempt 1 | status 503",
                "retry | GET | \(url) | attempt 1 | delayed | error httpStatus",
                "requestStarted | GET | \(url) | attempt 2",
                "requestFinished | GET | \(url) | attempt 2 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    @Test func aListenerThatComesDuringAnAttemptSeesTheRequestFromItsNextAttempt() async throws {
        let clock = ManualClock()
        let transport = ControlledTransport()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: transport,
            retry: RetryPolicy(initialDelay: .seconds(1), jitter: .none), clock: clock)
        let read = Task { try await session.send(Endpoint(.get, "posts/1"), as: Post.self) }
        try await transport.waitForRequests(1)
        // The first attempt started before anyone listened: its end is not told, as its start was not.
        let events = session.diagnostics()
        transport.answer(0, json: "{}", status: 503)
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(post))
        #expect(try await read.value == post)
        // The marker request is the transport's third: it is held until answered.
        let collected = Task { await eventsUntilMarker(events, session: session) }
        try await transport.waitForRequests(3)
        transport.answer(2, json: "{}")
        #expect(
            await collected.value == [
                "retry | GET | \(url) | attempt 1 | delayed | error httpStatus",
                "requestStarted | GET | \(url) | attempt 2",
                "requestFinished | GET | \(url) | attempt 2 | status 200",
            ])
    }

    @Test func aRevalidationAnsweredNotModifiedSaysSo() async throws {
        let transport = ScriptedTransport([
            .status(200, json: json(post), headers: ["ETag": "\"v1\""]), .status(304, json: ""),
        ])
        let session = makeSession(transport)
        let resource = Resource<RemotePost>(session: session)
        _ = try await resource.read("1")
        let events = session.diagnostics()
        #expect(try await resource.read("1") == post)
        #expect(transport.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        #expect(
            await eventsUntilMarker(events, session: session) == [
                "stateChanged | Resource<RemotePost> | available → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "requestFinished | GET | \(url) | attempt 1 | status 304 | not modified",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    @Test func aReadAnsweredFromMemoryIsACacheHit() async throws {
        let transport = ScriptedTransport([.status(200, json: json(post))])
        let session = makeSession(transport)
        let resource = Resource<RemotePost>(session: session)
        _ = try await resource.read("1")
        let events = session.diagnostics()
        #expect(try await resource.read("1", policy: .skipIfLoaded) == post)
        #expect(transport.requestCount == 1)
        #expect(await eventsUntilMarker(events, session: session) == ["cacheHit | Resource<RemotePost>"])
    }

    @Test func aRefusedOptimisticUpdateShowsTheValueThenTheRollback() async throws {
        let refusing = NetworkSession(
            baseURL: "http://test.local/api",
            transport: ScriptedTransport([.status(200, json: json(post)), .status(500)]),
            timeLimit: nil)
        let refusingStore = ResourceStore(session: refusing)
        let resource = refusingStore.resource(RemotePost.self, id: "1")
        // A live list of the item's type: the store's news reaches it.
        let list = refusingStore.list(RemoteFeed.self, request: "all")
        _ = try await resource.read("1")
        let events = refusing.diagnostics()
        var edited = post
        edited.title = "Edited"
        await #expect(throws: NetworkError.httpStatus(code: 500, body: Data("{}".utf8))) {
            try await resource.update(edited, optimistic: edited)
        }
        #expect(resource.value == post)
        let patch = "PATCH | http://test.local/api/posts/1"
        #expect(
            await eventsUntilMarker(events, session: refusing) == [
                "stateChanged | Resource<RemotePost> posts/1 | available → loading",
                "storeNews | Resource<RemotePost> posts/1 | 1 Post | receivers 1",
                "requestStarted | \(patch) | attempt 1",
                "requestFinished | \(patch) | attempt 1 | status 500",
                "requestFailed | \(patch) | attempt 1 | error httpStatus",
                "stateChanged | Resource<RemotePost> posts/1 | loading → failure(httpStatus)",
                "storeNews | Resource<RemotePost> posts/1 | 1 Post | receivers 1",
                "operationFinished | Resource<RemotePost> posts/1 | callers 1",
            ])
        // The list must live to here: in a release build a last use earlier lets it go at once.
        withExtendedLifetime(list) {}
    }

    /// A pushed change's news counts every live holder it reaches: the lists and the resources of the item,
    /// whether the type has versions (each list checks the change against what it shows) or not; a holder that
    /// shows a newer version does not hear it, and is not counted.
    @Test func aPushedChangesNewsCountsEveryHolderItReaches() async throws {
        /// The same posts, with their titles as versions: a later title replaces an earlier one.
        struct RemoteTitledPost: Readable {
            typealias Value = Post
            typealias ReadRequest = String
            static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
            static func version(of post: Post) -> ItemVersion? { ItemVersion(post.title) }
        }
        let (store, _) = try makeStore()
        let post = store.resource(RemotePost.self, id: "42")
        let lists = ["latest", "oldest"].map { store.list(RemoteFeed.self, request: $0) }
        try await post.read("42")
        for list in lists { try await list.refresh() }
        let events = store.session.diagnostics()
        store.apply(.updated(Post(id: "42", title: "y, pushed")), as: RemotePost.self)
        store.apply(.updated(Post(id: "42", title: "z, pushed")), as: RemoteTitledPost.self)
        // Older than what every holder shows: none of them hears it.
        store.apply(.updated(Post(id: "42", title: "a, older")), as: RemoteTitledPost.self)
        let news = await eventsUntilMarker(events, session: store.session).filter { $0.hasPrefix("storeNews") }
        #expect(
            news == [
                "storeNews | 1 Post | receivers 3", "storeNews | 1 Post | receivers 3",
                "storeNews | 1 Post | receivers 0",
            ])
        #expect(lists.allSatisfy { $0.items.contains(Post(id: "42", title: "z, pushed")) })
        #expect(post.value?.title == "z, pushed")
    }

    @Test func secretsNeverAppear() async throws {
        let stub = StubTransport()
        stub.stub(
            .get, "/api/posts/1?token=s3cret", status: 200, headers: ["Set-Cookie": "sid=s3cret"],
            body: Data(json(post).utf8))
        let session = NetworkSession(
            baseURL: "http://user:pa55@test.local/api", transport: stub,
            defaultHeaders: ["Authorization": "Bearer s3cret"])
        let events = session.diagnostics()
        struct Secretive: Readable {
            typealias Value = Post
            static func readEndpoint(for id: String) -> Endpoint {
                Endpoint(.get, "posts/1", query: ["token": "s3cret"])
            }
        }
        let secretive = Resource<Secretive>(session: session)
        _ = try await secretive.read("1")
        let all = await eventsUntilMarker(events, session: session)
        #expect(all.contains { $0.contains("token=redacted") })
        #expect(!all.joined().contains("s3cret"))
        #expect(!all.joined().contains("pa55"))
    }

    @Test func noEventIsBuiltWithoutAListenerAndAStreamSeesOnlyWhatFollowsIt() async throws {
        let transport = ScriptedTransport([.status(200, json: json(post))])
        let session = makeSession(transport)
        let resource = Resource<RemotePost>(session: session)
        _ = try await resource.read("1")
        let events = session.diagnostics()
        #expect(await eventsUntilMarker(events, session: session).isEmpty)
    }

    @Test func cancellingTheConsumerEndsTheSequence() async throws {
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
        let events = session.diagnostics()
        let started = AsyncLatch()
        let consumer = Task {
            var count = 0
            started.open()
            for await _ in events { count += 1 }
            return count
        }
        try await started.wait()
        consumer.cancel()
        #expect(await consumer.value == 0)
    }

    @Test func aBurstReachesAWaitingConsumerWhole() async throws {
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics(bufferingNewest: 1_000)
        let consumer = Task {
            var finished = 0
            for await event in events where event.kind == .operationFinished {
                finished += 1
                if finished == 50 { break }
            }
            return finished
        }
        for _ in 0..<50 { _ = try await resource.read("1") }
        #expect(await consumer.value == 50)
    }

    @Test func aSlowConsumerKeepsTheNewestEvents() async throws {
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics(bufferingNewest: 5)
        for _ in 0..<3 { _ = try await resource.read("1") }
        // Each read emits 5 events; only the last read's remain.
        var iterator = events.makeAsyncIterator()
        var kept: [String] = []
        for _ in 0..<5 { if let event = await iterator.next() { kept.append(event.kind.name) } }
        #expect(kept == ["stateChanged", "requestStarted", "requestFinished", "stateChanged", "operationFinished"])
    }

    /// The limit is crossed again and again, and every object and request the kept events name is gone by the
    /// time they are read: the sequence keeps what they name, exactly for the newest events.
    @Test func eventsReadAfterTheirObjectsAreGoneStillNameThem() async throws {
        let events: DiagnosticEvents
        do {
            let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
            events = session.diagnostics(bufferingNewest: 7)
            let resource = Resource<RemotePost>(session: session)
            for id in 0..<30 { _ = try await resource.read("\(id)") }
        }
        var iterator = events.makeAsyncIterator()
        var kept: [String] = []
        for _ in 0..<7 { if let event = await iterator.next() { kept.append(line(event)) } }
        let last = "http://test.local/api/posts/29"
        #expect(
            kept == [
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
                "stateChanged | Resource<RemotePost> | available → loading",
                "requestStarted | GET | \(last) | attempt 1",
                "requestFinished | GET | \(last) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    /// Errors are held for the kept events like their subjects, past the limit, with each failure's code: the
    /// record of an event holds neither.
    @Test func eventsKeptPastTheLimitStillCarryTheirErrors() async throws {
        let events: DiagnosticEvents
        let failures: [NetworkError] = [
            .timeout, .invalidResponse("bad"), .file("gone"),
            .transport(
                code: .cannotFindHost, message: "no host"),
        ]
        do {
            let session = makeSession(ScriptedTransport(failures.map { .failure($0) }))
            events = session.diagnostics(bufferingNewest: 6)
            let resource = Resource<RemotePost>(session: session)
            for id in 0..<failures.count { _ = try? await resource.read("\(id)") }
        }
        var iterator = events.makeAsyncIterator()
        var kept: [String] = []
        for _ in 0..<6 { if let event = await iterator.next() { kept.append(line(event)) } }
        let last = "http://test.local/api/posts/3"
        #expect(
            kept == [
                "stateChanged | Resource<RemotePost> | failure(file) → loading",
                "requestStarted | GET | \(last) | attempt 1",
                "requestFinished | GET | \(last) | attempt 1 | error transport",
                "requestFailed | GET | \(last) | attempt 1 | error transport",
                "stateChanged | Resource<RemotePost> | loading → failure(transport)",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    /// Two listeners each get every event, named, whichever reads first.
    @Test func everyListenerGetsEveryEvent() async throws {
        let session = makeSession(ScriptedTransport([.status(200, json: json(post))]))
        let resource = Resource<RemotePost>(session: session)
        let first = session.diagnostics()
        let second = session.diagnostics()
        _ = try await resource.read("1")
        let expected = [
            "stateChanged | Resource<RemotePost> | idle → loading",
            "requestStarted | GET | \(url) | attempt 1",
            "requestFinished | GET | \(url) | attempt 1 | status 200",
            "stateChanged | Resource<RemotePost> | loading → available",
            "operationFinished | Resource<RemotePost> | callers 1",
        ]
        #expect(await eventsUntilMarker(second, session: session) == expected)
        // The first stream stops at the first marker too, the one sent for the second.
        #expect(await eventsUntilMarker(first, session: session) == expected)
    }
}
