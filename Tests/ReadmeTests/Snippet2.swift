// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import ResourceKit

final class PostService: Sendable {
    let post: Resource<RemotePost>

    init(session: NetworkSession) {
        post = Resource(session: session)
    }

    /// Logs every state the post goes through until the task is cancelled.
    func watch() -> Task<Void, Never> {
        let states = post.states  // subscribe now: the first element is the current state
        return Task {
            for await state in states {
                switch state {
                case .idle: print("nothing loaded")
                case .loading(let previous): print("loading, showing \(previous?.title ?? "nothing")")
                case .available(let post): print("loaded \(post.title)")
                case .failure(let error, _): print("failed: \(error)")
                }
            }
        }
    }
}
