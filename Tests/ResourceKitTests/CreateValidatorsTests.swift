import Foundation
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

@testable import ResourceKit

/// A create's answer brings its validators, as an update's does: the next change of the value is made on them.
@Suite(.timeLimit(.minutes(1))) struct CreateValidatorsTests {
    @Test(arguments: [false, true])
    func aCreatesValidatorsAreTheValuesOwn(inAStore: Bool) async throws {
        let transport = ControlledTransport()
        let session = makeTimelessSession(transport)
        let post =
            inAStore
            ? ResourceStore(session: session).resource(RemotePost.self, id: "44")
            : Resource<RemotePost>(session: session)
        let made = Post(id: "44", title: "New")
        let create = Task { try await post.create(made) }
        try await transport.waitForRequests(1)
        transport.answer(
            0, json: json(made), headers: ["ETag": "\"c1\"", "Last-Modified": "Wed, 21 Oct 2026 07:28:00 GMT"])
        #expect(try await create.value == made)
        #expect(post.state == .available(made))
        #expect(post.mutationBase()?.validators?.entityTag == "\"c1\"")
        #expect(post.mutationBase()?.validators?.lastModified == "Wed, 21 Oct 2026 07:28:00 GMT")
    }

    /// The same without validators: none are made up.
    @Test func aCreateWithoutValidatorsHasNone() async throws {
        let transport = ControlledTransport()
        let post = Resource<RemotePost>(session: makeTimelessSession(transport))
        let create = Task { try await post.create(Post(id: "44", title: "New")) }
        try await transport.waitForRequests(1)
        transport.answer(0, json: json(Post(id: "44", title: "New")))
        _ = try await create.value
        #expect(post.mutationBase()?.validators == nil)
    }
}
