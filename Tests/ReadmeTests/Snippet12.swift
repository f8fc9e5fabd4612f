// Copied verbatim from README.md; ReadmeTests checks that they stay the same.
import Foundation
import ResourceKit
import ResourceKitTransfer

func fetchTheVideo(session: NetworkSession, to file: URL) async throws {
    let progress = TransferProgress()
    let watcher = Task {
        for await status in progress.updates() {
            print(status)  // 1048576 of 314572800 bytes …
        }
    }
    let downloaded = try await session.download(Endpoint(.get, "videos/7/file"), to: file, progress: progress)
    print(downloaded.byteCount, downloaded.resumedFrom)
    watcher.cancel()
}
