import Foundation
import ResourceKit
import Testing

@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .serialized, .timeLimit(.minutes(2)))
struct PocketBaseTests {
    @Test func crudThroughResourceWithAuthentication() async throws {
        let session = try await PocketBase.authenticated()
        let post = Resource<RemotePBPost>(session: session)
        let created = try await post.create(NewPBPost(title: "Integration", body: "hello", userId: 7))
        #expect(created.title == "Integration")
        #expect(post.state == .available(created))

        var edited = created
        edited.title = "Integration, edited"
        let updated = try await post.update(edited)
        #expect(updated.title == "Integration, edited")

        let anonymous = Resource<RemotePBPost>(session: PocketBase.session())
        #expect(try await anonymous.read(created.id) == updated)

        try await post.delete()
        #expect(post.state == .idle)
        let error = await #expect(throws: NetworkError.self) { try await anonymous.read(created.id) }
        #expect(error?.statusCode == 404)
    }

    /// What the docs say of PocketBase (InMemoryBackend's "Conditional writes", ResourceKitPocketBase): it
    /// honours no precondition, so a write conditional on a version the record no longer has is applied.
    @Test func pocketBaseAppliesAWriteWhateverItsPreconditions() async throws {
        let session = try await PocketBase.authenticated()
        let post = Resource<RemotePBPost>(session: session)
        let created = try await post.create(NewPBPost(title: "Preconditions", body: "", userId: 3))
        var edited = created
        edited.title = "Applied anyway"
        let endpoint = RemotePBPost.updateEndpoint(for: edited)
            .setting(header: "If-Match", to: "\"a-tag-it-never-had\"")
            .setting(header: "If-Unmodified-Since", to: "Sat, 01 Jan 2000 00:00:00 GMT")
        let answer = try await session.send(endpoint, as: PBPost.self)
        #expect(answer.title == "Applied anyway")
        #expect(
            try await Resource<RemotePBPost>(session: PocketBase.session()).read(created.id).title == "Applied anyway")
        try await post.delete()
    }

    @Test func unauthenticatedCreateFailsWithTheServersError() async throws {
        let post = Resource<RemotePBPost>(session: PocketBase.session())
        let error = try #require(
            await #expect(throws: NetworkError.self) {
                try await post.create(NewPBPost(title: "Nope", body: "", userId: 1))
            })
        let status = try #require(error.statusCode)
        #expect((400..<500).contains(status))
        guard let server = error.serverError else { Issue.record("expected .server, got \(error)"); return }
        #expect(!server.message.isEmpty)
    }

    /// The seeded posts only, as the page sequence's test: other tests create and delete posts meanwhile, and a
    /// post deleted between two pages left one page more than the items it counted.
    @Test func listResourceLoadsEveryRecordOnce() async throws {
        let list = ListResource<SeededPBPosts>(session: PocketBase.session(), request: ())
        try await list.loadAll()
        #expect(list.items.compactMap(\.position) == Array(1...PocketBase.seeded))
        #expect(Set(list.items.map(\.id)).count == list.items.count)
        #expect(list.pagination.totalCount == PocketBase.seeded)
        #expect(!list.pagination.hasMore)
        #expect(list.pagination.pagesLoaded == (PocketBase.seeded + 49) / 50)
        let pages = list.pagination.pagesLoaded
        try await list.loadNextPage()
        #expect(list.pagination.pagesLoaded == pages)
    }

    /// The seeded posts only: other tests create and delete posts meanwhile, which would move the pages.
    @Test func pageSequenceWalksTheSameRecords() async throws {
        var seen: [Int] = []
        var pages = 0
        for try await page in PocketBase.session().pages(of: SeededPBPosts.self) {
            pages += 1
            seen += page.items.compactMap(\.position)
            #expect(page.totalItems == PocketBase.seeded)
        }
        #expect(seen == Array(1...PocketBase.seeded))
        #expect(pages == (PocketBase.seeded + 49) / 50)
    }

    @Test func validationErrorCarriesTheFieldMessage() async throws {
        let session = try await PocketBase.authenticated()
        let post = Resource<RemotePBPost>(session: session)
        let error = await #expect(throws: NetworkError.self) {
            try await post.create(NewPBPost(title: nil, body: "no title", userId: 1))
        }
        guard let server = error?.serverError else {
            Issue.record("expected .server, got \(String(describing: error))"); return
        }
        #expect(server.status == 400)
        #expect(server.fieldErrors["title"]?.isEmpty == false)
    }

    @Test func missingRecordIs404() async throws {
        let post = Resource<RemotePBPost>(session: PocketBase.session())
        let error = await #expect(throws: NetworkError.self) { try await post.read("doesnotexist000") }
        #expect(error?.statusCode == 404)
        #expect(post.state == .failure(try #require(error), previous: nil))
    }
}
