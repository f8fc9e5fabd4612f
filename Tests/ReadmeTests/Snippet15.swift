// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit
import ResourceKitTransfer

struct NewPhotoPost: Sendable {
    var title: String
    var photo: URL
    var progress: TransferProgress
}

struct PostsWithPhotos: Creatable {
    typealias Value = Post
    typealias CreateRequest = NewPhotoPost

    static func createEndpoint(for post: NewPhotoPost) -> Endpoint {
        var form = MultipartForm()
        form.append(post.title, name: "title")
        form.append(contentsOf: post.photo, name: "photo", contentType: "image/jpeg")
        var endpoint = Endpoint(.post, "posts", body: .multipart(form))
        endpoint.uploadProgress = post.progress
        return endpoint
    }
}

func share(_ photo: URL, session: NetworkSession) async throws -> Post {
    let progress = TransferProgress()
    let bar = Task {
        for await status in progress.updates() {
            print(status.fractionCompleted ?? 0)  // 0.0 … 0.42 … 1.0
        }
    }
    defer { bar.cancel() }
    let post = Resource<PostsWithPhotos>(session: session)
    return try await post.create(NewPhotoPost(title: "Beach", photo: photo, progress: progress))
}
