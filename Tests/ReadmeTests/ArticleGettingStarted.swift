// Copied verbatim from GettingStarted.md, so that the article cannot show code that does not compile.
import ResourceKit
import ResourceKitPocketBase

func makePocketBaseSession() -> NetworkSession {
    NetworkSession(
        baseURL: "https://api.example.com/v1",
        validation: PocketBaseValidation(),
        adapters: [BearerTokenAdapter(token: "…")])
}

func makeStagingSession(token: String) -> NetworkSession {
    var configuration = NetworkSession.Configuration(baseURL: "https://staging.example.com/v1")
    configuration.validation = PocketBaseValidation()
    configuration.adapters = [BearerTokenAdapter(token: token)]
    configuration.retry = .standard
    configuration.timeLimit = .seconds(20)
    return NetworkSession(configuration: configuration)
}

func sendRequests(to session: NetworkSession) async throws {
    let post: Post = try await session.send(Endpoint(.get, "posts").appending(id: "42"))
    try await session.send(Endpoint(.delete, "posts").appending(id: "42"))  // Void
    let raw = try await session.response(for: Endpoint(.head, "posts"))  // status, headers, body
    print(post.title, raw.statusCode)
}
