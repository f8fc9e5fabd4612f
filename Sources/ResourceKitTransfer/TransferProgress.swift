public import Observation
public import ResourceKitHTTP

/// How far a transfer has come: pass one to ``ResourceKitHTTP/NetworkSession/download(_:to:progress:)`` and watch it. Use one
/// per transfer: once finished, it changes no more.
///
/// ``completedBytes`` and ``status`` always read exactly what was written so far. Observation (SwiftUI)
/// and ``updates()`` hear of changes at most once per ``interval`` while bytes flow, and always of the
/// first and the last (``Status/isFinished``), so a fast transfer does not flood its observers.
public final class TransferProgress: Sendable, Observable, ProgressReporting {
    /// A transfer's progress at one moment.
    public struct Status: Sendable, Equatable, CustomStringConvertible {
        /// Bytes done, including those of an earlier attempt a download resumed from.
        public var completedBytes: Int
        /// The total, when the server announced it.
        public var expectedBytes: Int?
        /// Whether the transfer ended, completed or not.
        public var isFinished: Bool

        /// Creates a status.
        /// - Parameters:
        ///   - completedBytes: Bytes done.
        ///   - expectedBytes: The total, if known.
        ///   - isFinished: Whether the transfer ended.
        public init(completedBytes: Int, expectedBytes: Int? = nil, isFinished: Bool = false) {
            self.completedBytes = completedBytes
            self.expectedBytes = expectedBytes
            self.isFinished = isFinished
        }

        /// The fraction done, from 0 to 1, when the total is known: an empty transfer (a total of zero) is done
        /// once finished (1), and not before (0).
        public var fractionCompleted: Double? {
            guard let expectedBytes else { return nil }
            guard expectedBytes > 0 else { return isFinished ? 1 : 0 }
            return min(1, Double(completedBytes) / Double(expectedBytes))
        }

        /// As in `1200 of 4096 bytes` or `1200 bytes, finished`.
        public var description: String {
            let done = expectedBytes.map { "\(completedBytes) of \($0) bytes" } ?? "\(completedBytes) bytes"
            return isFinished ? done + ", finished" : done
        }
    }

    private struct State {
        var status = Status(completedBytes: 0)
        var lastPublished: ContinuousClock.Instant?
        var streams = Subscribers<Status>()
    }

    /// The least time between two changes observers hear of while bytes flow.
    public let interval: Duration
    private let state = Locked(State())
    private let registrar = ObservationRegistrar()

    /// Creates a progress to give a transfer.
    /// - Parameter interval: The least time between two updates while bytes flow; 100 ms by default. One
    ///   that is not positive lets every change through.
    public init(interval: Duration = .milliseconds(100)) { self.interval = interval }

    /// The progress now, exactly.
    public var status: Status {
        registrar.access(self, keyPath: \.status)
        return state.withLock { $0.status }
    }

    /// Bytes done now, exactly.
    public var completedBytes: Int { status.completedBytes }

    /// A new stream of the progress: first the current status, then the changes as observers hear of them,
    /// ending after the one that says ``Status/isFinished``. Cancelling the task that iterates it
    /// unregisters it.
    /// - Returns: The stream.
    public func updates() -> AsyncStream<Status> {
        state.stream(\.streams) { state in (state.status, state.status.isFinished) }
    }

    /// Takes a step of an upload the session sends.
    package func report(_ step: TransferStep) {
        switch step {
        case .started(let completed, let expected): start(completed: completed, expected: expected)
        case .advanced(let count): advance(by: count)
        case .finished: finish()
        }
    }

    /// The transfer (re)started: `completed` bytes are there already, of `expected`.
    func start(completed: Int64, expected: Int64?) {
        update(force: true) {
            $0 = Status(completedBytes: Int(clamping: completed), expectedBytes: expected.map { Int(clamping: $0) })
        }
    }

    /// `count` more bytes went through.
    func advance(by count: Int) {
        // Saturating: past `Int.max` bytes (2 GiB where `Int` has 32 bits) the count stays there, never traps.
        update(force: false) { status in
            let (sum, overflow) = status.completedBytes.addingReportingOverflow(count)
            status.completedBytes = overflow ? .max : sum
        }
    }

    /// The transfer ended, done or not.
    func finish() {
        update(force: true) { $0.isFinished = true }
    }

    private func update(force: Bool, _ change: (inout Status) -> Void) {
        let now = ContinuousClock.now
        let published: [AsyncStream<Status>.Continuation]? = state.withLock { state in
            guard !state.status.isFinished else { return nil }
            change(&state.status)
            if !force, let last = state.lastPublished, now - last < interval { return nil }
            state.lastPublished = now
            state.streams.yield(state.status)
            return state.status.isFinished ? state.streams.removeAll() : []
        }
        guard let finished = published else { return }
        registrar.withMutation(of: self, keyPath: \.status) {}
        for stream in finished { stream.finish() }
    }
}
