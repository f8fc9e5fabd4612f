import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The concurrency contract of `Resource`, one interleaving per test, forced with a transport whose answers
/// the test releases.
@Suite(.timeLimit(.minutes(1))) struct ResourceContractTests {
    let p1 = Post(id: "1", title: "one")
    let p2 = Post(id: "2", title: "two")
    let p4 = Post(id: "4", title: "four")

    @Test func cancelledNewestReadRestoresTheNewerAnswerAndTheOldestNeverLands() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeSession(transport))
        let recorder = resource.recordStates()
        let read1 = Task { try await resource.read("1") }
        try await transport.waitForRequests(1)
        let read2 = Task { try await resource.read("2") }
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(p2))
        #expect(try await read2.value == p2)
        #expect(resource.state == .available(p2))

        let read3 = Task { try await resource.read("3") }
        try await transport.waitForRequests(3)
        #expect(resource.state == .loading(previous: p2))
        read3.cancel()
        await #expect(throws: NetworkError.cancelled) { try await read3.value }
        #expect(resource.state == .available(p2))

        transport.answer(0, json: json(p1))
        #expect(try await read1.value == p1)
        #expect(resource.state == .available(p2))
        // A last read proves nothing else was delivered in between.
        let read4 = Task { try await resource.read("4") }
        try await transport.waitForRequests(4)
        transport.answer(3, json: json(p4))
        _ = try await read4.value
        try await recorder.expect([
            .idle, .loading(previous: nil), .available(p2), .loading(previous: p2), .available(p2),
            .loading(previous: p2), .available(p4),
        ])
    }

    @Test func readJoiningAnOlderRequestShowsLoadingThenItsAnswer() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeSession(transport))
        let recorder = resource.recordStates()
        let first = Task { try await resource.read("1") }
        try await transport.waitForRequests(1)
        let read2 = Task { try await resource.read("2") }
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(p2))
        _ = try await read2.value

        let again = Task { try await resource.read("1") }
        try await waitUntil("the second read of 1 joins") { resource.waitingCallerCount == 2 }
        #expect(transport.requestCount == 2)
        #expect(resource.state == .loading(previous: p2))
        transport.answer(0, json: json(p1))
        #expect(try await again.value == p1)
        #expect(try await first.value == p1)
        try await recorder.expect([
            .idle, .loading(previous: nil), .available(p2), .loading(previous: p2), .available(p1),
        ])
    }

    @Test func readAskedAfterAnUpdateNeverJoinsAReadSentBeforeIt() async throws {
        let transport = ControlledTransport()
        let old = Post(id: "1", title: "old")
        let updated = Post(id: "1", title: "updated")
        let resource = Resource<RemotePost>(session: makeSession(transport))
        let recorder = resource.recordStates()
        let stale = Task { try await resource.read("1") }
        try await transport.waitForRequests(1)
        let update = Task { try await resource.update(updated) }
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(updated))
        #expect(try await update.value == updated)
        #expect(resource.state == .available(updated))

        let fresh = Task { try await resource.read("1") }
        try await transport.waitForRequests(3)
        #expect(transport.requests.map(\.httpMethod) == ["GET", "PATCH", "GET"])
        // The read sent before the update answers with the old value: it must not land.
        transport.answer(0, json: json(old))
        #expect(try await stale.value == old)
        #expect(resource.state == .loading(previous: updated))
        transport.answer(2, json: json(updated))
        #expect(try await fresh.value == updated)
        try await recorder.expect([
            .idle, .loading(previous: nil), .available(updated), .loading(previous: updated), .available(updated),
        ])
        #expect(!recorder.states.contains(.available(old)))
    }

    @Test(arguments: [true, false])
    func cancelledJoinerCountsAsNeverHavingAsked(olderAnswersFirst: Bool) async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeSession(transport))
        let recorder = resource.recordStates()
        let a = Task { try await resource.read("1") }
        try await transport.waitForRequests(1)
        let b = Task { try await resource.read("2") }
        try await transport.waitForRequests(2)
        let c = Task { try await resource.read("1") }
        try await waitUntil("C joins A") { resource.waitingCallerCount == 3 }
        c.cancel()
        await #expect(throws: NetworkError.cancelled) { try await c.value }
        if olderAnswersFirst {
            transport.answer(0, json: json(p1))
            _ = try await a.value
            #expect(resource.state == .loading(previous: p1))
            transport.answer(1, json: json(p2))
            _ = try await b.value
        } else {
            transport.answer(1, json: json(p2))
            _ = try await b.value
            transport.answer(0, json: json(p1))
            _ = try await a.value
        }
        #expect(resource.state == .available(p2))
        let expected: [ResourceState<Post>] =
            olderAnswersFirst
            ? [.idle, .loading(previous: nil), .loading(previous: p1), .available(p2)]
            : [.idle, .loading(previous: nil), .available(p2)]
        try await recorder.expect(expected)
    }

    @Test(arguments: [
        (SearchRequest(id: "1", query: ["q": "x&r=1"]), SearchRequest(id: "1", query: ["q": "x", "r": "1"])),
        (SearchRequest(id: "1&expand=author"), SearchRequest(id: "1", query: ["expand": "author"])),
        (
            // A value that looks like a second header once joined (line breaks are refused outright).
            SearchRequest(id: "1", headers: ["X-A": "1; x-b: 2"]),
            SearchRequest(id: "1", headers: ["X-A": "1", "X-B": "2"])
        ),
        (
            SearchRequest(id: "1", headers: ["X-A": "1&x"]),
            SearchRequest(id: "1", query: ["x": ""], headers: ["X-A": "1"])
        ),
    ])
    func differentEndpointsNeverShareARequestOrALoadedValue(a: SearchRequest, b: SearchRequest) async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemoteSearch>(session: makeSession(transport))
        let first = Task { try await resource.read(a) }
        try await transport.waitForRequests(1)
        let second = Task { try await resource.read(b) }
        try await transport.waitForRequests(2)
        #expect(transport.requestCount == 2)
        transport.answer(0, json: json(p1))
        transport.answer(1, json: json(p2))
        _ = try await (first.value, second.value)

        // `a`'s answer is loaded now; `.skipIfLoaded` for `b` must still ask the server.
        let reload = Task { try await resource.read(a) }
        try await transport.waitForRequests(3)
        transport.answer(2, json: json(p1))
        _ = try await reload.value
        let other = Task { try await resource.read(b, policy: .skipIfLoaded) }
        try await transport.waitForRequests(4)
        transport.answer(3, json: json(p2))
        #expect(try await other.value == p2)
        // The same request again is answered from the loaded value.
        #expect(try await resource.read(b, policy: .skipIfLoaded) == p2)
        #expect(transport.requestCount == 4)
    }

    @Test func identicalEndpointsShareOneRequest() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemoteSearch>(session: makeSession(transport))
        let request = SearchRequest(id: "1", query: ["q": "x&r=1"], headers: ["X-A": "1"])
        let first = Task { try await resource.read(request) }
        try await transport.waitForRequests(1)
        let second = Task { try await resource.read(request) }
        try await waitUntil("the second read joins") { resource.waitingCallerCount == 2 }
        transport.answer(0, json: json(p1))
        #expect(try await first.value == p1)
        #expect(try await second.value == p1)
        #expect(transport.requestCount == 1)
    }
}

struct SearchRequest: Sendable, CustomTestStringConvertible {
    var id: String
    var query: [String: String] = [:]
    var headers: HTTPHeaders = [:]

    var testDescription: String {
        "id \(id.debugDescription), query \(query), headers \(headers.description.debugDescription)"
    }
}

/// Reads a post through an endpoint with a query and headers, to compare sharing keys.
struct RemoteSearch: Readable {
    typealias Value = Post
    typealias ReadRequest = SearchRequest

    static func readEndpoint(for request: SearchRequest) -> Endpoint {
        Endpoint(.get, "posts", query: request.query, headers: request.headers).appending(id: request.id)
    }
}
