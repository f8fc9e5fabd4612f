// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit
import ResourceKitTransfer

func followTheLog(session: NetworkSession) async throws {
    let response = try await session.bytes(Endpoint(.get, "logs/live"))
    print(response.statusCode, response.expectedLength ?? -1)
    for try await line in response.body.lines() {
        print(line)
    }
}
