import Foundation
import ResourceKit
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(1))) struct LinkHeaderTests {
    let base = URL(string: "https://a/items?page=1")

    @Test(arguments: [
        (#"<https://a/b?page=2>; rel="next", <https://a/b?page=9>; rel="last""#, "https://a/b?page=2"),
        (#"<https://a/b?page=9>; rel="last", <https://a/b?page=2>; rel="next""#, "https://a/b?page=2"),
        (#"<https://a/b?page=2>; rel=next"#, "https://a/b?page=2"),
        (#"</items?cursor=abc>; rel="next""#, "https://a/items?cursor=abc"),
        (#"<https://a/b?x=1,2>; title="a, b; c"; rel="prev next""#, "https://a/b?x=1,2"),
        // Escaped quotes and backslashes inside a quoted string do not end it.
        (#"<https://a/b?p=2>; title="say \"hi\""; rel="next""#, "https://a/b?p=2"),
        (#"<https://a/b?p=1>; title="a \\"; rel="prev", <https://a/b?p=3>; rel="next""#, "https://a/b?p=3"),
    ])
    func nextLinkIsFound(header: String, expected: String) {
        #expect(LinkHeader.url(forRelation: "next", in: header, relativeTo: base)?.absoluteString == expected)
    }

    @Test(arguments: [
        "", "garbage", "<>; rel=next", "<https://a/b>; rel=\"last\"", "<https://a", ";;;,,,<<>>",
        "<javascript:alert(1)>; rel=next", "rel=next", "<https://a/b?page=2>; rel",
    ])
    func garbageHasNoNextLink(header: String) {
        #expect(LinkHeader.url(forRelation: "next", in: header, relativeTo: base) == nil)
    }

    @Test func pagingModesReturnTheSameItems() async throws {
        let backend = try backend(with: 95)
        let session = makeSession(backend)
        let paged = ListResource<RemotePagedItems>(session: session, request: ())
        let offset = ListResource<RemoteBareItems>(session: session, request: ())
        let linked = ListResource<RemoteLinkedItems>(session: session, request: ())
        try await paged.loadAll()
        try await offset.loadAll()
        try await linked.loadAll()
        #expect(paged.items == items(0..<95))
        #expect(offset.items == items(0..<95))
        #expect(linked.items == items(0..<95))
        #expect(linked.pagination.pagesLoaded == 10)
    }
}
