// Code blocks of ResourceKit.docc/OneSourceOfTruth.md, verbatim; ReadmeTests checks them.
import Foundation
import ResourceKit

struct RemoteWholeFeed: Listable {
    typealias Value = Post
    typealias Item = Post
    typealias ListResponse = PageEnvelope<Post>
    static let pagination = PageNumberPagination(pageSize: 50)
    static let itemsAreComplete = true  // each item is the whole post a read answers, not a preview
    static func listEndpoint(for request: Void) -> Endpoint { Endpoint(.get, "posts") }
}
