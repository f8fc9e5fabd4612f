// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit

func titleOrExplanation(_ post: Resource<RemotePost>) async -> String {
    do {
        return try await post.read("42").title
    } catch {
        switch error.code {
        case .httpStatus where error.statusCode == 404: return "This post was deleted."
        case .server: return error.serverError?.message ?? "The server refused."
        case .transport, .timeout: return "You are offline."
        case .cancelled: return ""
        default: return "Something went wrong: \(error)"
        }
    }
}
