import Foundation
import ResourceKit
import ResourceKitPocketBase
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs one of the repository's scripts and returns its standard output; ends it after `timeout`.
func runScript(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let process = Process()
    process.executableURL = root.appendingPathComponent(arguments[0])
    process.arguments = Array(arguments.dropFirst())
    process.currentDirectoryURL = root
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let finished = AsyncStream<Int32> { continuation in
        process.terminationHandler = { process in
            continuation.yield(process.terminationStatus)
            continuation.finish()
        }
    }
    try process.run()
    let watchdog = Task {
        try await Task.sleep(for: timeout)
        process.terminate()
    }
    defer { watchdog.cancel() }
    var status: Int32 = -1
    for await code in finished { status = code }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    guard status == 0 else { throw ScriptFailure(arguments: arguments, status: status) }
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
}

struct ScriptFailure: Error, CustomStringConvertible {
    var arguments: [String]
    var status: Int32
    var description: String { "\(arguments.joined(separator: " ")) exited with \(status)" }
}

@Suite(.enabled(if: PocketBase.isConfigured, PocketBase.skipReason), .timeLimit(.minutes(3)))
struct PocketBaseResilienceTests {
    /// A server of its own, stopped in the middle of a list load and started again.
    @Test func aListSurvivesTheServerGoingAwayAndComingBack() async throws {
        let instance = "fault-\(UInt32.random(in: 0...UInt32.max))"
        let url = try await runScript(["Scripts/pocketbase", "start", "--instance", instance, "--seed", "120"])
        do {
            try await outage(url: url, instance: instance)
        } catch {
            _ = try? await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
            throw error
        }
        _ = try await runScript(["Scripts/pocketbase", "stop", "--instance", instance])
    }

    private func outage(url: String, instance: String) async throws {
        let session = NetworkSession(
            baseURL: url + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)))
        let list = ListResource<RemotePBPosts>(session: session, request: ())
        #expect(try await list.loadFirstPage().count == 50)

        _ = try await runScript(["Scripts/pocketbase", "halt", "--instance", instance])
        // Fails fast: a refused connection, not the transport's 45 s timeout.
        let error = try #require(await #expect(throws: NetworkError.self) { try await list.loadNextPage() })
        guard let code = error.transportCode else {
            Issue.record("expected a transport error, got \(error)")
            return
        }
        #expect(code == .cannotConnectToHost)
        // The loaded page stays and the failure shows.
        #expect(list.items.count == 50)
        #expect(list.pagination.nextPageError == error)
        #expect(list.pagination.pagesLoaded == 1)
        #expect(list.pagination.hasMore)

        _ = try await runScript(["Scripts/pocketbase", "resume", "--instance", instance])
        let items = try await list.loadNextPage()
        #expect(items.count == 100)
        #expect(items.map(\.position) == (1...100).map { Optional($0) })
        #expect(list.pagination.nextPageError == nil)
        #expect(try await list.loadAll().count == 120)
    }

    /// A superuser token that expires after a second; the refresh uses PocketBase's `auth-refresh` with a
    /// longer-lived token, the way an app refreshes an access token with a refresh token.
    @Test func twentyRequestsWithAnExpiredTokenShareOneRefresh() async throws {
        struct Auth: Decodable {
            struct Record: Decodable { var id: String }
            var token: String
            var record: Record
        }
        struct Credentials: Encodable { var identity: String, password: String }
        struct Duration: Encodable { var duration: Int }
        let plain = PocketBase.session()
        let login: Auth = try await plain.send(
            Endpoint(
                .post, "_superusers/auth-with-password",
                body: .json(
                    Credentials(
                        identity: PocketBase.environment["POCKETBASE_EMAIL"] ?? "",
                        password: PocketBase.environment["POCKETBASE_PASSWORD"] ?? ""))))
        let refreshToken = login.token
        let shortLived: Auth = try await plain.send(
            Endpoint(
                .post, Endpoint(.post, "_superusers/impersonate").appending(id: login.record.id).path,
                headers: ["Authorization": refreshToken], body: .json(Duration(duration: 1))))

        // Waits (bounded) until the server rejects the short-lived token.
        let probe = Endpoint(.get, "posts", headers: ["Authorization": shortLived.token])
        let until = ContinuousClock.now + .seconds(30)
        // lint-waits: the token expires on the server's clock, which signals nothing; ask again.
        while (try? await plain.send(probe)) != nil {
            #expect(ContinuousClock.now < until, "the token never expired")
            if ContinuousClock.now >= until { return }
            try await Task.sleep(for: .milliseconds(100))
        }

        let tokens = Locked((current: shortLived.token, refreshes: 0))
        let authenticator = BearerAuthenticator(
            token: { tokens.withLock { $0.current } },
            refresh: { (_: String) async throws(NetworkError) -> String in
                tokens.withLock { $0.refreshes += 1 }
                let renewed: Auth = try await plain.send(
                    Endpoint(.post, "_superusers/auth-refresh", headers: ["Authorization": refreshToken]))
                tokens.withLock { $0.current = renewed.token }
                return renewed.token
            })
        let session = NetworkSession(
            baseURL: (PocketBase.url ?? "") + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)), authenticator: authenticator)
        struct Collection: Decodable { var name: String }
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask { try await session.send(Endpoint(.get, "posts"), as: Collection.self).name }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "posts", count: 20))
        #expect(tokens.withLock { $0.refreshes } == 1)
        #expect(tokens.withLock { $0.current } != shortLived.token)
    }

    /// The refresh itself is rejected by PocketBase: the request fails with that error, wrapped.
    @Test func aRejectedRefreshFailsTheRequestWithItsError() async throws {
        let plain = PocketBase.session()
        let refreshes = Locked(0)
        let authenticator = BearerAuthenticator(
            token: { "not-a-token" },
            refresh: { (failed: String) async throws(NetworkError) -> String in
                refreshes.withLock { $0 += 1 }
                struct Auth: Decodable { var token: String }
                let renewed: Auth = try await plain.send(
                    Endpoint(.post, "_superusers/auth-refresh", headers: ["Authorization": failed]))
                return renewed.token
            })
        let session = NetworkSession(
            baseURL: (PocketBase.url ?? "") + "/api/collections", validation: PocketBaseValidation(),
            transport: URLSessionTransport(timeout: .seconds(45)), authenticator: authenticator)
        let error = try #require(
            await #expect(throws: NetworkError.self) { try await session.send(Endpoint(.get, "posts")) })
        guard error.code == .authenticationFailed, let server = error.underlyingError?.serverError else {
            Issue.record("expected authenticationFailed(.server), got \(error)")
            return
        }
        #expect(server.status == 401)
        #expect(refreshes.withLock { $0 } == 1)
    }
}
