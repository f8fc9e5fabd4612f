import Foundation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ETag round trips on the in-memory backend: `If-None-Match`, `304`, the value kept without decoding.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ConditionalReadTests {
    @Test func aNotModifiedAnswerKeepsTheValueWithoutDecodingAndCountsAsFresh() async throws {
        let clock = ManualClock()
        let (store, backend) = try makeStore(clock: clock)
        let post = store.resource(RemoteCountedPost.self, id: "42")
        let recorder = post.recordStates()
        let decodings = CountedPost.decodings.load(ordering: .relaxed)
        let value = try await post.read("42")
        #expect(CountedPost.decodings.load(ordering: .relaxed) == decodings + 1)
        #expect(backend.requestLog[0].headers["If-None-Match"] == nil)

        clock.advance(by: .seconds(5))
        #expect(try await post.read("42", policy: .skipIfFresh) == value)
        #expect(backend.requestLog.count == 2)
        let conditional = try #require(backend.requestLog[1].headers["If-None-Match"])
        #expect(conditional.hasPrefix("\""))
        #expect(CountedPost.decodings.load(ordering: .relaxed) == decodings + 1)
        // The 304 is a fresh load: the window starts again.
        clock.advance(by: .seconds(4))
        try await post.read("42", policy: .skipIfFresh)
        #expect(backend.requestLog.count == 2)
        #expect(
            try await recorder.waitForCount(5) == [
                .idle, .loading(previous: nil), .available(value), .loading(previous: value), .available(value),
            ])

        // Changed on the server: the old tag no longer matches, so a new body comes, decoded.
        let other = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        try await Resource<RemotePost>(session: other).update(Post(id: "42", title: "Changed"))
        let changed = try await post.read("42")
        #expect(changed == CountedPost(id: "42", title: "Changed"))
        #expect(CountedPost.decodings.load(ordering: .relaxed) == decodings + 2)
        #expect(backend.requestLog.last?.headers["If-None-Match"] == conditional)
    }

    @Test func aReadOfAnotherRequestIsNeverConditional() async throws {
        let (_, backend) = try makeStore()
        let session = NetworkSession(baseURL: "http://test.local/api", transport: backend, timeLimit: nil)
        let resource = Resource<RemoteCountedPost>(session: session)
        try await resource.read("42")
        try await resource.read("43")
        try await resource.read("42")
        #expect(backend.requestLog.map { $0.headers["If-None-Match"] == nil } == [true, true, true])
        try await resource.read("42")
        #expect(backend.requestLog.last?.headers["If-None-Match"] != nil)
    }

    @Test func aNotModifiedAnswerToAnUnconditionalReadIsAFailure() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeTimelessSession(transport))
        let read = Task { try await resource.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, .success(HTTPResponse(statusCode: 304)))
        await #expect(throws: NetworkError.httpStatus(code: 304, body: Data())) { try await read.value }
    }

    @Test func lastModifiedAloneSendsIfModifiedSince() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeTimelessSession(transport))
        let date = "Wed, 21 Oct 2026 07:28:00 GMT"
        var read = Task { try await resource.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, json: json(storePosts[1]), headers: ["Last-Modified": date])
        _ = try await read.value
        read = Task { try await resource.read("42") }
        try await transport.waitForRequests(2)
        #expect(transport.requests[1].value(forHTTPHeaderField: "If-Modified-Since") == date)
        #expect(transport.requests[1].value(forHTTPHeaderField: "If-None-Match") == nil)
        transport.answer(1, .success(HTTPResponse(statusCode: 304)))
        #expect(try await read.value == storePosts[1])
        #expect(resource.state == .available(storePosts[1]))
    }

    @Test func anUpdateForgetsTheValidators() async throws {
        let transport = ControlledTransport()
        let resource = Resource<RemotePost>(session: makeTimelessSession(transport))
        let read = Task { try await resource.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, json: json(storePosts[1]), headers: ["ETag": "\"a\""])
        _ = try await read.value
        let update = Task { try await resource.update(Post(id: "42", title: "Edited")) }
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(Post(id: "42", title: "Edited")))
        _ = try await update.value
        let again = Task { try await resource.read("42") }
        try await transport.waitForRequests(3)
        // The tag named the value before the update: sending it could keep a value the resource no longer shows.
        #expect(transport.requests[2].value(forHTTPHeaderField: "If-None-Match") == nil)
        transport.answer(2, json: json(Post(id: "42", title: "Edited")))
        _ = try await again.value
    }

    @Test func aValueFromAnotherHolderForgetsTheValidators() async throws {
        let transport = ControlledTransport()
        let store = ResourceStore(session: makeTimelessSession(transport))
        let post = store.resource(RemotePost.self, id: "42")
        let read = Task { try await post.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, json: json(storePosts[1]), headers: ["ETag": "\"a\""])
        _ = try await read.value
        let list = store.list(RemoteFeed.self, request: "all")
        let load = Task { try await list.loadFirstPage() }
        try await transport.waitForRequests(2)
        let newer = Post(id: "42", title: "Newer")
        transport.answer(1, .success(feedPage([newer])))
        _ = try await load.value
        #expect(post.state == .available(newer))
        let again = Task { try await post.read("42") }
        try await transport.waitForRequests(3)
        // Tag "a" named the older post: a 304 to it would bring that post back.
        #expect(transport.requests[2].value(forHTTPHeaderField: "If-None-Match") == nil)
        transport.answer(2, json: json(newer))
        #expect(try await again.value == newer)
    }

    /// An update's own tag: a store's resource that had read its item sends it with its next read; a resource
    /// made on its own reads in full (its update's answer is not its read's).
    @Test(arguments: [true, false]) func anUpdatesOwnTagIsSentByAStoresResourceOnly(inStore: Bool) async throws {
        let transport = ControlledTransport()
        let session = makeTimelessSession(transport)
        let resource =
            inStore
            ? ResourceStore(session: session).resource(RemotePost.self, id: "42")
            : Resource<RemotePost>(session: session)
        let read = Task { try await resource.read("42") }
        try await transport.waitForRequests(1)
        transport.answer(0, json: json(storePosts[1]), headers: ["ETag": "\"a\""])
        _ = try await read.value
        let edited = Post(id: "42", title: "Edited")
        let update = Task { try await resource.update(edited) }
        try await transport.waitForRequests(2)
        transport.answer(1, json: json(edited), headers: ["ETag": "\"b\""])
        _ = try await update.value
        let again = Task { try await resource.read("42") }
        try await transport.waitForRequests(3)
        #expect(transport.requests[2].value(forHTTPHeaderField: "If-None-Match") == (inStore ? "\"b\"" : nil))
        if inStore {
            transport.answer(2, .success(HTTPResponse(statusCode: 304, headers: ["ETag": "\"b\""])))
        } else {
            transport.answer(2, json: json(edited), headers: ["ETag": "\"b\""])
        }
        #expect(try await again.value == edited)
    }
}
