import BenchmarkFixtures
import Foundation
import ResourceKit
import ResourceKitEventStream
import ResourceKitPocketBase

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Live data: one pushed change to many holders, a sustained stream of events, and the time from a server's
/// write on a socket to the change showing in a list.
struct LiveWorkloads {
    let scale: Double
    let rounds: Int
    let warmup: Int

    func run() async throws -> Report {
        var report = Report()
        report.merge(try await fanOut())
        report.merge(try await sustained())
        report.merge(try await latency())
        return report
    }

    /// `store.apply` of one update to an item that 1,000 live lists hold, against one that one resource holds.
    func fanOut() async throws -> Report {
        var report = Report()
        let session = NetworkSession(baseURL: "http://bench.local", transport: try RowServer())
        let holders = max(20, Int(1_000 * scale))
        let crowded = ResourceStore(session: session)
        let lists = (0..<holders).map { crowded.list(RemoteRowLists.self, request: $0) }
        for list in lists { try await list.loadFirstPage() }
        let quiet = ResourceStore(session: session)
        let single = quiet.resource(RemoteRowByID.self, id: 1)
        try await single.read(1)
        // The same update to as many holders that do only what the platform makes any live, observable holder
        // do (see `FloorHolder`): each list's ten rows, row 1 first.
        let floor = FloorStore()
        let floorHolders = (0..<holders).map { list in
            floor.holder(of: [Row(id: 1, n: 0)] + (1..<10).map { Row(id: 1_000 * (list + 1) + $0, n: 0) })
        }
        let events = max(20, Int(1_000 * scale))
        var n = 0
        @Sendable func perEvent(_ store: ResourceStore, start: Int) -> Double {
            let elapsed = ContinuousClock().measure {
                for i in 0..<events { store.apply(.updated(Row(id: 1, n: start + i)), as: RemoteRowByID.self) }
            }
            return elapsed.inSeconds / Double(events) * 1e6
        }
        @Sendable func perFloorEvent() -> Double {
            let elapsed = ContinuousClock().measure {
                for i in 0..<events { floor.apply(Row(id: 1, n: i)) }
            }
            return elapsed.inSeconds / Double(events) * 1e6
        }
        let results = try await interleaved(
            workload: "one pushed update (store.apply)", unit: "µs", rounds: rounds, warmup: warmup,
            [
                ("one resource holds it", { perEvent(quiet, start: 0) }),
                ("\(holders) lists hold it", { perEvent(crowded, start: 0) }),
                ("floor: \(holders) bare holders", { perFloorEvent() }),
            ])
        n = events - 1
        results.forEach { report.add($0) }
        report.compare(
            "pushed update to \(holders) lists / to one resource", results[1], over: results[0],
            meaning: "one event replaced in every live holder, with no request")
        report.compare(
            "pushed update to \(holders) lists / to bare holders", results[1], over: results[2],
            meaning: "the lists' cost over a weak load, a lock and an Observation mutation each")
        guard lists.allSatisfy({ $0.items[0] == Row(id: 1, n: n) }),
            floorHolders.allSatisfy({ $0.items[0] == Row(id: 1, n: n) })
        else {
            throw BenchmarkError("a pushed update did not reach every list")
        }
        return report
    }

    /// For profilers: `count` pushed updates of an item that 1,000 live lists hold.
    static func profileFanOut(_ count: Int) async throws {
        let store = ResourceStore(session: NetworkSession(baseURL: "http://bench.local", transport: try RowServer()))
        let lists = (0..<1_000).map { store.list(RemoteRowLists.self, request: $0) }
        for list in lists { try await list.loadFirstPage() }
        // The CPU per update of the fastest tenth of the run: a profiler's reading, free of a busy machine's spells.
        var fastest = Double.infinity
        for chunk in stride(from: 0, to: count, by: max(1, count / 10)) {
            let end = min(count, chunk + max(1, count / 10))
            let cpuStart = cpuSeconds()
            for i in chunk..<end { store.apply(.updated(Row(id: 1, n: i)), as: RemoteRowByID.self) }
            fastest = min(fastest, (cpuSeconds() - cpuStart) / Double(end - chunk) * 1e6)
        }
        let line = "CPU per pushed update, fastest tenth: \(Int(fastest.rounded())) µs\n"
        FileHandle.standardError.write(Data(line.utf8))
        guard lists.allSatisfy({ $0.items[0] == Row(id: 1, n: count - 1) }) else {
            throw BenchmarkError("a pushed update did not reach every list")
        }
    }

    /// PocketBase-shaped events at 1,000 a second, through the parser, the decoder and the store, for ten lists
    /// that hold the changed row: the CPU each event costs, and the share of a core the stream takes. Then the
    /// same events written back to back: the same work per event, without a wake-up per event and with the
    /// caches warm from the event before, which is what the library's own code costs.
    func sustained() async throws -> Report {
        var report = Report()
        let seconds = max(0.2, 2 * scale)
        let count = Int(seconds * 1_000)
        for rate in [1_000.0, nil] {
            let workload = rate == nil ? "pushed events back to back" : "1,000 pushed events a second"
            var perEvent: [Double] = []
            var share: [Double] = []
            for _ in 0..<(rounds + warmup) {
                let feed = PacedFeed()
                let store = ResourceStore(
                    session: NetworkSession(baseURL: "http://bench.local", transport: try RowServer()))
                let lists = (0..<10).map { store.list(RemoteRowLists.self, request: $0) }
                for list in lists { try await list.loadFirstPage() }
                let realtime = PocketBaseRealtime(
                    session: NetworkSession(baseURL: "http://bench.local/api", transport: feed)
                ).following(RemoteRowByID.self, collection: "rows")
                let live = Task { try await realtime.run(in: store) }
                let writer = try await feed.connected()
                let cpuStart = cpuSeconds()
                let clock = ContinuousClock()
                let start = clock.now
                try await Self.writeEvents(count, rate: rate, to: writer)
                // Every event has reached the lists before the CPU is read.
                while lists[9].items.first?.n != count { try await clock.sleep(for: .milliseconds(1)) }
                let cpu = cpuSeconds() - cpuStart
                let wall = (clock.now - start).inSeconds
                live.cancel()
                perEvent.append(cpu / Double(count) * 1e6)
                share.append(cpu / wall * 100)
            }
            // The harness alone: the same writes to a body whose reader drops them.
            var harness: [Double] = []
            for _ in 0..<(rounds + warmup) {
                let (body, writer) = ResponseBody.makeStream()
                let reader = Task { for try await _ in body {} }
                let cpuStart = cpuSeconds()
                try await Self.writeEvents(count, rate: rate, to: writer)
                writer.finish()
                try await reader.value
                harness.append((cpuSeconds() - cpuStart) / Double(count) * 1e6)
            }
            let whole = Measurement(
                workload: workload, variant: "CPU per event", unit: "µs", samples: Array(perEvent.dropFirst(warmup)))
            let pacing = Measurement(
                workload: workload, variant: "harness alone", unit: "µs", samples: Array(harness.dropFirst(warmup)))
            report.add(whole)
            report.add(pacing)
            let above = String(format: "%.0f", whole.median - pacing.median)
            if rate == nil {
                report.notes.append(
                    "pushed events back to back: \(above) µs of CPU per event above the harness (writes and a reader), parsing, decoding and showing it in 10 lists, caches warm"
                )
            } else {
                report.notes.append(
                    "pushed events: \(above) µs of CPU per event above the harness (paced writes and a reader), parsing, decoding and showing it in 10 lists"
                )
                report.add(
                    Measurement(
                        workload: workload, variant: "CPU, share of a core", unit: "%",
                        samples: Array(share.dropFirst(warmup))))
            }
        }
        return report
    }

    /// Writes `count` PocketBase-shaped updates of row 1 (n = 1…count), `rate` a second (`nil`: back to back),
    /// each on its own.
    static func writeEvents(_ count: Int, rate: Double?, to writer: ResponseBody.Writer) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        for i in 1...count {
            let text = "id:c\nevent:rows/*\ndata:{\"record\":{\"id\":1,\"n\":\(i)},\"action\":\"update\"}\n\n"
            try await writer.write(Data(text.utf8))
            if let rate { try await clock.sleep(until: start + .seconds(Double(i) / rate), tolerance: nil) }
        }
    }

    /// From the server writing an event on a loopback socket to a list's state showing it, through
    /// `URLSessionTransport`, `PocketBaseRealtime` and the store.
    func latency() async throws -> Report {
        var report = Report()
        let server = try EventServer()
        defer { server.close() }
        let store = ResourceStore(session: NetworkSession(baseURL: "http://bench.local", transport: try RowServer()))
        let list = store.list(RemoteRowLists.self, request: 0)
        try await list.loadFirstPage()
        let realtimeSession = NetworkSession(
            baseURL: "http://127.0.0.1:\(server.port)/api", transport: URLSessionTransport(timeout: .seconds(600)))
        let (opened, open) = AsyncStream.makeStream(of: Int.self)
        let realtime = PocketBaseRealtime(session: realtimeSession, onOpen: { open.yield($0) })
            .following(RemoteRowByID.self, collection: "rows")
        let live = Task { try await realtime.run(in: store) }
        defer { live.cancel() }
        var openings = opened.makeAsyncIterator()
        _ = await openings.next()
        var states = list.states.makeAsyncIterator()
        let samples = max(20, Int(300 * scale))
        var latencies: [Double] = []
        let clock = ContinuousClock()
        for i in 1...(samples + 20) {
            let start = clock.now
            server.push(
                "id:c\nevent:rows/*\ndata:{\"record\":{\"id\":1,\"n\":\(100_000 + i)},\"action\":\"update\"}\n\n")
            while let state = await states.next(), state.items.first?.n != 100_000 + i {}
            if i > 20 { latencies.append((clock.now - start).inSeconds * 1e6) }
            try await clock.sleep(for: .milliseconds(2))
        }
        let sorted = latencies.sorted()
        report.add(
            Measurement(
                workload: "event to visible, loopback socket", variant: "each event", unit: "µs", samples: sorted))
        report.notes.append(
            "event to visible: p99 \(Int(sorted[min(sorted.count - 1, sorted.count * 99 / 100)])) µs over \(sorted.count) events"
        )
        return report
    }
}

/// A realtime endpoint in memory whose stream the benchmark writes; subscriptions are answered `204`.
final class PacedFeed: HTTPTransport {
    private let writer = Locked<ResponseBody.Writer?>(nil)

    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        HTTPResponse(statusCode: 204, url: request.url)
    }

    func stream(_ request: URLRequest) async throws(NetworkError) -> StreamedResponse {
        let (body, writer) = ResponseBody.makeStream()
        _ = writer.yield(Data("id:c\nevent:PB_CONNECT\ndata:{\"clientId\":\"c\"}\n\n".utf8))
        self.writer.withLock { $0 = writer }
        return StreamedResponse(
            statusCode: 200, headers: ["Content-Type": "text/event-stream"], url: request.url, body: body)
    }

    /// The stream's writer, once the source has connected.
    func connected() async throws -> ResponseBody.Writer {
        while true {
            if let writer = writer.withLock({ $0 }) { return writer }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// A loopback HTTP server for PocketBase's realtime protocol: `GET` streams events the benchmark pushes,
/// `POST` answers `204`.
final class EventServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let streams = Locked<[Int32]>([])

    init() throws {
        let fd = socket(AF_INET, Platform.streamSocket, 0)
        guard fd >= 0 else { throw BenchmarkError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw BenchmarkError("bind or listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        descriptor = fd
        let streams = streams
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { Self.answer(client, streams) }
            }
        }
    }

    private static func answer(_ client: Int32, _ streams: Locked<[Int32]>) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        // The head, then (for a post) its body, by Content-Length.
        while true {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            received += buffer[0..<count]
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<end.lowerBound].lowercased()
            let length =
                head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard text.utf8.count - text.distance(from: text.startIndex, to: end.upperBound) >= length else { continue }
            if head.hasPrefix("get") {
                let response =
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                    + "id:c\nevent:PB_CONNECT\ndata:{\"clientId\":\"c\"}\n\n"
                // The head and the joining under one lock with `push`: a client that has read the head (and
                // tells the benchmark it opened) is already among the streams, so the first push reaches it; a
                // push before that finds no stream and writes nothing ahead of the head. (Written first and
                // joined after, a push in between was lost and the latency loop waited for it forever.)
                streams.withLock { streams in
                    write(client, response)
                    streams.append(client)
                }
            } else {
                write(client, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                closeSocket(client)
            }
            return
        }
    }

    private static func write(_ client: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Platform.send(client, $0.baseAddress, $0.count)
            }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Writes `event` to every open stream.
    func push(_ event: String) {
        for client in streams.withLock({ $0 }) { Self.write(client, event) }
    }

    func close() {
        for client in streams.withLock({ $0 }) { _ = shutdown(client, Int32(SHUT_RDWR)) }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        closeSocket(descriptor)
    }
}

extension Duration {
    /// The duration in seconds.
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
