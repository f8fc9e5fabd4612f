// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit

struct Tokens: Decodable { var token: String }

/// Holds the access token and renews it with a refresh token.
actor Credentials {
    private(set) var token: String?
    private let refreshToken: String
    private let auth = NetworkSession(baseURL: "https://api.example.com/v1")

    init(token: String?, refreshToken: String) {
        self.token = token
        self.refreshToken = refreshToken
    }

    func renew() async throws(NetworkError) -> String {
        let tokens: Tokens = try await auth.send(
            Endpoint(.post, "auth/refresh", headers: ["Authorization": "Bearer \(refreshToken)"]))
        token = tokens.token
        return tokens.token
    }
}

func resilientSession(_ credentials: Credentials) -> NetworkSession {
    NetworkSession(
        baseURL: "https://api.example.com/v1",
        authenticator: BearerAuthenticator(
            token: { await credentials.token },
            refresh: { _ in try await credentials.renew() }),
        retry: .standard,  // 3 attempts, waits from 0.5 s doubling, full jitter, Retry-After up to 60 s
        timeLimit: .seconds(15))  // every call ends within 15 s, whatever the server or the transport does
}

func upload(_ session: NetworkSession, key: String) async throws {
    // A POST is retried only with an idempotency key; this call has 2.5 s for all its attempts.
    let endpoint = Endpoint(
        .post, "uploads", headers: ["Idempotency-Key": key], body: .json(["name": "a.txt"]),
        timeLimit: .milliseconds(2500))
    do {
        try await session.send(endpoint)
    } catch {
        if error.statusCode == 429 { print("the server asks to wait", error.retryAfter ?? .zero) }
        throw error
    }
}
