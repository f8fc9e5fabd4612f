// The Swift blocks of ResilientRequests.md that no Snippet file holds, verbatim; ReadmeTests checks that they
// stay the same.
import Foundation
import ResourceKit

/// Holds a bearer token and renews it, for the authenticator of the article.
actor ResilientRequestsTokens {
    var current: String?

    func renew(_ rejected: String) async throws -> String {
        let token = UUID().uuidString
        current = token
        return token
    }
}

func resilientRequestsArticleAuthenticator(tokens: ResilientRequestsTokens) -> BearerAuthenticator {
    let authenticator = BearerAuthenticator(token: { await tokens.current }, refresh: { try await tokens.renew($0) })
    return authenticator
}
