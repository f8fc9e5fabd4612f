import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

/// Every property of an event, the ones `line(_:)` leaves out included: the emitting thread records events in
/// compact records whose slots several properties share, so a property must arrive on the kinds that fill it
/// and on no other.
private func everything(_ event: DiagnosticEvent) -> String {
    var parts = [event.kind.name]
    if let id = event.requestID { parts.append("request \(id)") }
    if let object = event.object { parts.append(object) }
    if let itemType = event.itemType { parts.append("of \(itemType)") }
    if let method = event.method, let url = event.url { parts.append("\(method) \(url)") }
    if let location = event.location { parts.append("to \(location)") }
    if let attempt = event.attempt { parts.append("attempt \(attempt)") }
    if let status = event.status { parts.append("status \(status)") }
    if let bytes = event.bytes { parts.append("\(bytes) bytes") }
    if let duration = event.duration { parts.append("took \(duration)") }
    if event.notModified { parts.append("not modified") }
    if let error = event.error { parts.append("error \(error.code)") }
    if let delay = event.delay { parts.append("retry in \(delay)") }
    if let previous = event.previousStateSummary { parts.append("from \(previous)") }
    if let state = event.stateSummary { parts.append("to \(state)") }
    if let callers = event.callers { parts.append("callers \(callers)") }
    if let count = event.itemCount { parts.append("items \(count)") }
    if let receivers = event.receivers { parts.append("receivers \(receivers)") }
    return parts.joined(separator: " | ")
}

@Suite(.timeLimit(.minutes(1))) struct DiagnosticRecordTests {
    let post = Post(id: "1", title: "One")
    let url = "http://test.local/api/posts/1"

    @Test func everyPropertyOfARetriedReadArrivesOnTheKindsThatFillItAndNoOther() async throws {
        let clock = ManualClock()
        let body = json(post)
        let session = NetworkSession(
            baseURL: "http://test.local/api",
            transport: ScriptedTransport([.failure(.timeout), .status(503), .status(200, json: body)]),
            retry: RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(1), multiplier: 2, jitter: .none),
            clock: clock)
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics()
        let read = Task { try await resource.read("1") }
        // The session's deadline timer sleeps beside the retries: wait for each retry's own wait.
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(1)) }
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(2)) }
        clock.advance(by: .seconds(2))
        #expect(try await read.value == post)
        let seen = await eventsUntilMarker(events, session: session, describe: everything)
        #expect(
            seen == [
                "stateChanged | Resource<RemotePost> | from idle | to loading",
                "requestStarted | request 1 | GET \(url) | attempt 1",
                "requestFinished | request 1 | GET \(url) | attempt 1 | took 0.0 seconds | error timeout",
                "retry | request 1 | GET \(url) | attempt 1 | error timeout | retry in 1.0 seconds",
                "requestStarted | request 1 | GET \(url) | attempt 2",
                "requestFinished | request 1 | GET \(url) | attempt 2 | status 503 | 2 bytes | took 0.0 seconds",
                "retry | request 1 | GET \(url) | attempt 2 | error httpStatus | retry in 2.0 seconds",
                "requestStarted | request 1 | GET \(url) | attempt 3",
                "requestFinished | request 1 | GET \(url) | attempt 3 | status 200 | \(body.utf8.count) bytes"
                    + " | took 0.0 seconds",
                "stateChanged | Resource<RemotePost> | from loading | to available",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }

    @Test func aRedirectNamesWhereItLeadsAndNothingElse() async throws {
        let session = NetworkSession(
            baseURL: "http://test.local/api",
            transport: ScriptedTransport([
                .status(301, headers: ["Location": "https://u:p@cdn.test/posts/1?sig=x"]),
                .status(307, headers: ["Location": "/api/posts/one"]), .status(200, json: json(post)),
            ]),
            clock: ManualClock())
        let events = session.diagnostics()
        _ = try await session.send(Endpoint(.get, "posts/1"), as: Post.self)
        let seen = await eventsUntilMarker(events, session: session, describe: everything)
        #expect(
            seen == [
                "requestStarted | request 1 | GET \(url) | attempt 1",
                "redirect | request 1 | GET \(url) | to https://redacted@cdn.test/posts/1?sig=redacted | status 301",
                "redirect | request 1 | GET https://redacted@cdn.test/posts/1?sig=redacted"
                    + " | to https://redacted@cdn.test/api/posts/one | status 307",
                "requestFinished | request 1 | GET \(url) | attempt 1 | status 200 | \(json(post).utf8.count) bytes"
                    + " | took 0.0 seconds",
            ])
    }

    @Test func aFailedReadKeepsItsErrorCodeInItsStateAndNoBytes() async throws {
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: ScriptedTransport([.status(404)]), clock: ManualClock())
        let resource = Resource<RemotePost>(session: session)
        let events = session.diagnostics()
        await #expect(throws: NetworkError.self) { try await resource.read("1") }
        let seen = await eventsUntilMarker(events, session: session, describe: everything)
        #expect(
            seen == [
                "stateChanged | Resource<RemotePost> | from idle | to loading",
                "requestStarted | request 1 | GET \(url) | attempt 1",
                "requestFinished | request 1 | GET \(url) | attempt 1 | status 404 | 2 bytes | took 0.0 seconds",
                "requestFailed | request 1 | GET \(url) | attempt 1 | error httpStatus",
                "stateChanged | Resource<RemotePost> | from loading | to failure(httpStatus)",
                "operationFinished | Resource<RemotePost> | callers 1",
            ])
    }
}
