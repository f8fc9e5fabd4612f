import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InProcessWorkloads {
    /// For profilers: reads on an instant transport with one consumer of the diagnostic feed.
    static func profileDiagnostics(_ count: Int) async throws {
        let transport = InstantTransport(body: try JSONEncoder().encode(Row(id: 1, n: 1)))
        let session = NetworkSession(baseURL: "http://bench.local", transport: transport)
        let resource = Resource<RemoteRow>(session: session)
        let events = session.diagnostics(bufferingNewest: 1_000_000)
        let listener = Task { for await _ in events {} }
        for _ in 0..<count { _ = try await resource.read() }
        listener.cancel()
    }

    /// What the diagnostic feed costs a read: nothing without a listener, and with one consumer draining it.
    func diagnostics() async throws -> Report {
        var report = Report()
        // Short rounds, ten times as many: the two variants alternate every few milliseconds, so that a slow
        // spell of a shared machine lands on both.
        let requests = max(200, Int(2_000 * scale))
        let transport = InstantTransport(body: try JSONEncoder().encode(Row(id: 1, n: 1)))
        let quiet = NetworkSession(baseURL: "http://bench.local", transport: transport)
        let watched = NetworkSession(baseURL: "http://bench.local", transport: transport)
        let quietResource = Resource<RemoteRow>(session: quiet)
        let watchedResource = Resource<RemoteRow>(session: watched)
        let received = Locked(0)
        let events = watched.diagnostics(bufferingNewest: 1_000_000)
        let listener = Task { for await _ in events { received.withLock { $0 += 1 } } }
        defer { listener.cancel() }
        @Sendable func perRead(_ resource: Resource<RemoteRow>) async throws -> Double {
            try await seconds { for _ in 0..<requests { _ = try await resource.read() } } / Double(requests) * 1e6
        }
        let results = try await interleaved(
            workload: "Resource.read with diagnostics", unit: "µs", rounds: rounds * 10, warmup: warmup * 10,
            [
                ("no listener", { try await perRead(quietResource) }),
                ("one listener", { try await perRead(watchedResource) }),
            ])
        results.forEach { report.add($0) }
        if results.count == 2 {
            report.compare(
                "diagnostics: one listener / none", results[1], over: results[0],
                meaning: "ratio of the medians")
            report.comparePaired(
                "diagnostics: one listener / none, paired", results[1], over: results[0],
                meaning: "a read's cost with a consumer of session.diagnostics(), median of round pairs (target ≤ 1.1)")
        }
        return report
    }
}
