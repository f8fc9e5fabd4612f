import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `cacheHit` for every read a `ReadPolicy` answers from memory, whether or not the read asks the machine.
@Suite(.timeLimit(.minutes(1))) struct ReadPolicyEventTests {
    let post = Post(id: "1", title: "One")

    /// A resource that has read the post once, on a manual clock.
    func loaded() async throws -> (ManualClock, ScriptedTransport, NetworkSession, Resource<RemotePost>) {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(200, json: json(post))])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport, clock: clock)
        let resource = Resource<RemotePost>(session: session)
        _ = try await resource.read("1")
        return (clock, transport, session, resource)
    }

    @Test func aFreshValueReturnedBySkipIfFreshIsACacheHit() async throws {
        let (_, transport, session, resource) = try await loaded()
        let events = session.diagnostics()
        #expect(try await resource.read("1", policy: .skipIfFresh(maxAge: .seconds(60))) == post)
        #expect(transport.requestCount == 1)
        #expect(await eventsUntilMarker(events, session: session) == ["cacheHit | Resource<RemotePost>"])
    }

    /// A stale value returned at once is a cache hit too; its revalidation then reports as any read does.
    @Test func aStaleValueReturnedByStaleWhileRevalidateIsACacheHitBeforeItsRead() async throws {
        let clock = ManualClock()
        let release = AsyncLatch()
        let body = Data(json(post).utf8)
        let transport = ScriptedTransport([
            .status(200, json: json(post)),
            // The revalidation, held until the test has seen it ask.
            .respond { request throws(NetworkError) in
                try await release.wait()
                return HTTPResponse(
                    statusCode: 200, headers: ["Content-Type": "application/json"], body: body, url: request.url)
            },
            .status(204),
        ])
        let session = NetworkSession(baseURL: "http://test.local/api", transport: transport, clock: clock)
        let resource = Resource<RemotePost>(session: session)
        _ = try await resource.read("1")
        clock.advance(by: .seconds(120))
        let events = session.diagnostics()
        #expect(try await resource.read("1", policy: .staleWhileRevalidate(maxAge: .seconds(60))) == post)
        try await waitUntil("the revalidation asks") { resource.waitingCallerCount == 1 }
        release.open()
        try await waitUntil("the revalidation lands") { resource.waitingCallerCount == 0 && !resource.state.isLoading }
        let url = "http://test.local/api/posts/1"
        let seen = await eventsUntilMarker(events, session: session)
        #expect(
            seen == [
                "cacheHit | Resource<RemotePost>",
                "stateChanged | Resource<RemotePost> | available → loading",
                "requestStarted | GET | \(url) | attempt 1",
                "requestFinished | GET | \(url) | attempt 1 | status 200",
                "stateChanged | Resource<RemotePost> | loading → available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ], "\(seen)")
    }

    /// A value too old for `skipIfFresh` is read, not reported as a hit.
    @Test func aStaleValueUnderSkipIfFreshIsReadNotACacheHit() async throws {
        let (clock, transport, session, resource) = try await loaded()
        clock.advance(by: .seconds(120))
        let events = session.diagnostics()
        _ = try await resource.read("1", policy: .skipIfFresh(maxAge: .seconds(60)))
        #expect(transport.requestCount == 2)
        #expect(!(await eventsUntilMarker(events, session: session)).contains("cacheHit | Resource<RemotePost>"))
    }
}

@Suite(.timeLimit(.minutes(1))) struct ListEndEventTests {
    /// A next page asked for at the end of the list sends nothing, and says so as a cache hit.
    @Test func aNextPageAtTheEndOfTheListIsACacheHit() async throws {
        let items = [Item(id: "1", n: 1)]
        let transport = ScriptedTransport([
            .respond { request throws(NetworkError) in
                HTTPResponse(statusCode: 200, body: envelope(items, page: 1, totalPages: 1), url: request.url)
            }
        ])
        let session = makeSession(transport)
        let list = ListResource<RemoteItems>(session: session)
        try await list.loadFirstPage()
        let events = session.diagnostics()
        try await list.loadNextPage()
        #expect(transport.requestCount == 1)
        #expect(await eventsUntilMarker(events, session: session) == ["cacheHit | ListResource<RemoteItems>"])
    }
}
