import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitPersistence
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The headline benchmark: one scripted app session, played the same way by a plain client and by ResourceKit,
/// against the same REST server over loopback (``CountingServer`` in front of an ``InMemoryBackend``), which
/// counts the requests and the bytes each costs.
///
/// The session: open a feed (3 pages of 50), open 20 posts from it (5 of them twice), edit 3, go back to the
/// feed, pull to refresh, go to the background for 60 s of the session's clock while a second device changes 10
/// posts, come back to the feed, then relaunch and open the feed and 5 posts again.
///
/// The rules of the comparison, for a sceptical reader:
/// - **The same freshness.** The server says `Cache-Control: max-age=30` on every `GET` answer and gives every
///   answer an `ETag` (records their own; list pages one of their body, with `304` for an `If-None-Match` that
///   names it). The plain client honours both; ResourceKit's types say `maxAge = 30 s`. Time is a
///   `ManualClock` both read: the 60 s in the background pass at once, for both.
/// - **The plain client** is an app on `URLSession` as Get or Alamofire apps are written: every screen loads
///   what it shows when it appears, through an HTTP cache. Its cache is a model of `URLCache` on the session's
///   clock (URLCache itself reads the wall clock, and swift-corelibs-foundation's does not revalidate): a
///   response younger than `max-age` is served without a request; an older one is revalidated with
///   `If-None-Match`, and a `304` refreshes it; a successful `PATCH` drops the cached answer of its URL (RFC
///   9111 §4.4); pull to refresh revalidates what the screen shows; the cache survives a relaunch, as
///   URLCache's disk cache does.
/// - **ResourceKit** is used as the README teaches: one `ResourceStore` with `StorePersistence` on disk; a post
///   screen reads its post with `.staleWhileRevalidate`; the feed screen is a `ListResource` whose type says
///   `itemsAreComplete` (the server's list answers whole posts), which the app loads when empty and refreshes
///   (first page, then the next two) when pull to refresh asks, or, showing its items meanwhile as a post
///   screen does, when it was loaded more than 30 s ago; a relaunch makes a new store on the same directory.
/// - **Stale content.** Both clients use the same 30 s. The plain client never shows an answer older than
///   that (URLCache revalidates first, as `max-age` without `stale-while-revalidate` asks); ResourceKit shows
///   a value older than that only while its revalidation is in flight, which the session waits for before its
///   next step (`settle()`), so every step and the end compare values as fresh as the plain client's.
/// - **The floor on bytes.** Whole pages over HTTP cannot cost less than: the feed once (3 pages), the 3
///   edits' answers, the refreshed first page (it holds the edits; the other two answer `304`), and all 3
///   pages after the background (the other device changed each). That is what ResourceKit receives, about
///   39 KiB against the plain client's 46 KiB; 3× fewer bytes would be less than the first feed alone, so
///   that goal is out of reach for any client of this server without a delta protocol.
/// - **Time to content** is the time from a screen's opening until it shows what it will show, from memory,
///   disk or the network, as its code returns it: the plain client's fetch through its cache, ResourceKit's
///   call. A revisit is every screen opened a second time (the 5 posts opened twice, the feed after the edits,
///   after the background and after the relaunch).
/// - `APPSESSION_STEPS=1` prints what each client had cost after each step of the session.
/// - **The end** is checked: after the relaunch, both clients show the server's values in the feed and in the
///   5 posts; the run fails otherwise. "Own edits missing" counts the posts a screen showed without the edit
///   the same client had just made.
struct AppSessionWorkload: Sendable {
    let rounds: Int
    static let freshness = Duration.seconds(30)

    func run() async throws -> Report {
        var report = Report()
        var samples: [String: [String: [Double]]] = [:]
        for _ in 0..<rounds {
            for (name, client) in [("plain URLSession client", Client.plain), ("ResourceKit", Client.kit)] {
                let outcome = try await Self.play(client)
                for (key, value) in outcome.figures { samples[name, default: [:]][key, default: []].append(value) }
            }
        }
        let order = [
            ("requests", "requests"), ("bytes received", "KiB"), ("304 answers", "requests"),
            ("own edits missing", "posts"), ("first screens, time to content", "ms"),
            ("revisited screens, time to content", "ms"), ("slowest revisit", "ms"),
        ]
        for (figure, unit) in order {
            for name in ["plain URLSession client", "ResourceKit"] {
                guard let values = samples[name]?[figure] else { continue }
                report.add(Measurement(workload: "app session: " + figure, variant: name, unit: unit, samples: values))
            }
        }
        for figure in ["requests", "bytes received"] {
            guard let plain = samples["plain URLSession client"]?[figure],
                let kit = samples["ResourceKit"]?[figure]
            else { continue }
            report.compare(
                "app session: plain \(figure) / ResourceKit's",
                Measurement(workload: "", variant: "", unit: "", samples: plain),
                over: Measurement(workload: "", variant: "", unit: "", samples: kit),
                meaning: "how many times fewer ResourceKit needs (goal ≥ 3)")
        }
        report.notes.append(
            "app session: the rules of the comparison are in the doc comment of Benchmarks/Runner/AppSessionWorkload.swift"
        )
        return report
    }

    enum Client: Sendable { case plain, kit }

    struct Outcome {
        var figures: [String: Double]
    }

    /// Plays the session once with a fresh server, data and directory.
    static func play(_ kind: Client) async throws -> Outcome {
        let backend = InMemoryBackend(basePath: "/api")
        backend.addCollection("posts")
        try backend.seed(
            (1...200).map { SessionPost(id: String(format: "%03d", $0), title: "Post \($0)", body: "Body \($0)") },
            into: "posts")
        let server = try CountingServer(backend: backend, maxAge: freshness)
        defer { server.stop() }
        let clock = ManualClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("app-session-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let baseURL = "http://127.0.0.1:\(server.port)/api"
        let client: any AppClient =
            switch kind {
            case .plain: PlainClient(baseURL: baseURL, clock: clock)
            case .kit: try KitClient(baseURL: baseURL, clock: clock, directory: directory)
            }
        var first: [Double] = []
        var revisits: [Double] = []
        var missing = 0
        // `APPSESSION_STEPS=1` prints what each client had cost after each step.
        let printsSteps = ProcessInfo.processInfo.environment["APPSESSION_STEPS"] != nil
        func mark(_ step: String) {
            guard printsSteps else { return }
            let taken = server.taken
            print("\(kind), after \(step): \(taken.requests) requests, \(taken.bytes) bytes, \(taken.notModified) 304s")
        }
        func timed<T>(_ revisit: Bool, _ screen: () async throws -> T) async throws -> T {
            let start = ContinuousClock.now
            let shown = try await screen()
            let elapsed = ContinuousClock.now - start
            let milliseconds =
                Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            if revisit { revisits.append(milliseconds) } else { first.append(milliseconds) }
            await client.settle()
            return shown
        }

        let feed = try await timed(false) { try await client.openFeed() }
        mark("feed")
        guard feed.count == 150 else { throw BenchmarkError("the feed shows \(feed.count) posts") }
        let opened = Array(feed.prefix(20)).map(\.id)
        for id in opened { _ = try await timed(false) { try await client.openPost(id) } }
        mark("20 details")
        for id in opened.prefix(5) { _ = try await timed(true) { try await client.openPost(id) } }
        mark("5 again")
        var edited: [String: String] = [:]
        for id in opened.prefix(3) {
            let post = try await client.openPost(id)
            var change = post
            change.title = "Edited \(id)"
            try await client.edit(change)
            edited[id] = change.title
        }
        mark("edits")
        let afterEdits = try await timed(true) { try await client.openFeed() }
        missing += afterEdits.filter { post in edited[post.id].map { title in post.title != title } ?? false }.count
        mark("feed again")
        _ = try await client.pullToRefresh()
        await client.settle()
        mark("refresh")
        // Meanwhile, on another device: 10 posts of the feed change.
        for index in stride(from: 30, to: 130, by: 10) {
            var post = feed[index]
            post.body = "Changed on another device"
            _ = try await backend.send(
                URLRequest.patch("\(baseURL)/posts/\(post.id)", body: try JSONEncoder().encode(post)))
        }
        clock.advance(by: .seconds(60))
        _ = try await timed(true) { try await client.openFeed() }
        mark("come back")
        try await client.relaunch()
        let relaunched = try await timed(true) { try await client.openFeed() }
        mark("relaunch feed")
        var posts: [SessionPost] = []
        for id in opened.prefix(5) { posts.append(try await timed(true) { try await client.openPost(id) }) }
        await client.settle()
        mark("relaunch posts")
        // Both end on what the server has: the feed, and the posts opened after the relaunch.
        let records = try backend.records(SessionPost.self, in: "posts")
        let truth = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
        let shownFeed = try await client.shownFeed()
        guard shownFeed == Array(records.prefix(150)), relaunched.count == 150,
            posts.allSatisfy({ truth[$0.id] == $0 })
        else {
            throw BenchmarkError("\(kind): the session did not end on the server's values")
        }
        let taken = server.taken
        return Outcome(figures: [
            "requests": Double(taken.requests), "bytes received": Double(taken.bytes) / 1024,
            "304 answers": Double(taken.notModified), "own edits missing": Double(missing),
            "first screens, time to content": median(first), "revisited screens, time to content": median(revisits),
            "slowest revisit": revisits.max() ?? 0,
        ])
    }

    private static func median(_ values: [Double]) -> Double {
        Measurement(workload: "", variant: "", unit: "", samples: values).median
    }
}

/// A post of the session's server.
struct SessionPost: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String
    var body: String
}

/// What a screen of the session asks of a client.
protocol AppClient: Sendable {
    /// The feed screen appears: its 150 posts.
    func openFeed() async throws -> [SessionPost]
    /// A post's screen appears.
    func openPost(_ id: String) async throws -> SessionPost
    /// The user edits a post.
    func edit(_ post: SessionPost) async throws
    /// The user pulls the feed to refresh it.
    func pullToRefresh() async throws -> [SessionPost]
    /// The app is killed and launched again: what is in memory goes, what is on disk stays.
    func relaunch() async throws
    /// What the feed shows now, without asking anything.
    func shownFeed() async throws -> [SessionPost]
    /// Waits until what a screen started in the background (a revalidation) is done.
    func settle() async
}

extension URLRequest {
    /// A `PATCH` of `body` as JSON.
    static func patch(_ url: String, body: Data) -> URLRequest {
        var request = URLRequest(url: URL(string: url) ?? URL(fileURLWithPath: "/"))
        request.httpMethod = "PATCH"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        return request
    }
}
