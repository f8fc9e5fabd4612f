import Foundation
import ResourceKit
import ResourceKitEventStream

extension PocketBaseRealtime {
    /// The client id of the current connection and what was posted for it.
    final class Connection: Sendable {
        struct State {
            var clientID: String?
            var connections = 0
            var postedTopics: [String]?
            var postedFor: String?
            var announced = 0
            /// The task reading the current event stream, which a lost client cancels.
            var reader: Task<Result<Void, NetworkError>, Never>?
            /// Why the reader was cancelled: the server forgot the client.
            var lost: NetworkError?
            /// Whether a connection opened (its subscriptions landed) since the last lost client.
            var openedSinceLost = false
            /// The connection told `opened` and not yet `closed`.
            var shownOpen: Int?
            /// How many connections were told `opened`.
            var toldOpen = 0
            /// Whether the source is stopping: the stream's statuses are no longer relayed.
            var isStopping = false
            /// The number of the last connection whose stream closed before it opened.
            var closedBeforeOpen = 0
        }

        let state = Locked(State())
        /// Where statuses go, when someone asked for them.
        let statuses: AsyncStream<EventStreamStatus>.Continuation?

        init(statuses: AsyncStream<EventStreamStatus>.Continuation?) { self.statuses = statuses }

        /// The event stream's status, as the source's: its `closed` for a connection told open, and its
        /// `reconnecting`. Its `opened` comes before the subscriptions land, so the source tells its own, and
        /// its `finished` too. A stream dropped for a lost client tells nothing more: the source says why.
        func relay(_ status: EventStreamStatus) {
            guard let statuses else { return }
            state.withLock { state in
                guard state.lost == nil, !state.isStopping else { return }
                switch status.kind {
                case .closed:
                    guard let open = state.shownOpen else {
                        state.closedBeforeOpen = state.connections
                        return
                    }
                    state.shownOpen = nil
                    statuses.yield(EventStreamStatus(kind: .closed, connection: open, error: status.error))
                case .reconnecting:
                    statuses.yield(
                        EventStreamStatus(
                            kind: .reconnecting, connection: state.toldOpen, delay: status.delay,
                            failures: status.failures, error: status.error))
                default:
                    break
                }
            }
        }

        /// The source connects again after a lost client, in `wait`.
        func reconnecting(after wait: Duration, failures: Int, error: NetworkError) {
            guard let statuses else { return }
            state.withLock { state in
                _ = statuses.yield(
                    EventStreamStatus(
                        kind: .reconnecting, connection: state.toldOpen, delay: wait, failures: failures, error: error)
                )
            }
        }

        /// The source is stopping: what its tasks tell while they are cancelled is not relayed, and ``finish(_:)``
        /// closes the open connection with what stopped the source.
        func stopRelaying() {
            state.withLock { $0.isStopping = true }
        }

        /// The source stopped: with `error`, or `nil` when the server ended the stream.
        func finish(_ error: NetworkError?) {
            guard let statuses else { return }
            state.withLock { state in
                if let open = state.shownOpen {
                    state.shownOpen = nil
                    statuses.yield(EventStreamStatus(kind: .closed, connection: open, error: error))
                }
                statuses.yield(EventStreamStatus(kind: .finished, connection: state.toldOpen, error: error))
            }
            statuses.finish()
        }

        func reading(_ task: Task<Result<Void, NetworkError>, Never>) {
            let cancel = state.withLock { state in
                state.reader = task
                return state.lost != nil
            }
            if cancel { task.cancel() }
        }

        /// The server answered that it does not know `clientID`: its stream is dropped, so that a new
        /// connection brings a new client.
        func lost(_ clientID: String, _ error: NetworkError) {
            let reader = state.withLock { state -> Task<Result<Void, NetworkError>, Never>? in
                guard state.clientID == clientID, state.lost == nil else { return nil }
                if let open = state.shownOpen {
                    state.shownOpen = nil
                    statuses?.yield(EventStreamStatus(kind: .closed, connection: open, error: error))
                }
                state.lost = error
                state.clientID = nil
                return state.reader
            }
            reader?.cancel()
        }

        /// The error of a lost client that ended the last stream, if one did; clears it.
        func takeLost() -> NetworkError? {
            state.withLock { state in
                defer { state.lost = nil }
                return state.lost
            }
        }

        /// Whether a connection opened since the last lost client; clears it.
        var wasOpenedSinceLost: Bool {
            state.withLock { state in
                defer { state.openedSinceLost = false }
                return state.openedSinceLost
            }
        }

        func connected(_ clientID: String) {
            state.withLock { state in
                state.clientID = clientID
                state.connections += 1
                state.postedTopics = nil
            }
        }

        /// The client, its connection's number, and whether `topics` must be posted; `nil` before a client id.
        func pending(_ topics: [String]) -> (String, Int, Bool)? {
            state.withLock { state in
                guard let clientID = state.clientID else { return nil }
                return (clientID, state.connections, state.postedFor != clientID || state.postedTopics != topics)
            }
        }

        func posted(_ topics: [String], for clientID: String) {
            state.withLock { state in
                guard state.clientID == clientID else { return }
                state.postedTopics = topics
                state.postedFor = clientID
            }
        }

        func postFailed(_ clientID: String) {
            state.withLock { state in
                if state.clientID == clientID { state.postedTopics = nil }
            }
        }

        /// Whether connection `number` of `clientID` is newly ready: its first subscriptions are posted.
        func opened(_ clientID: String, _ number: Int) -> Bool {
            state.withLock { state in
                guard state.clientID == clientID, state.announced < number else { return false }
                state.announced = number
                state.openedSinceLost = true
                if let statuses, state.closedBeforeOpen != number {
                    state.toldOpen += 1
                    state.shownOpen = state.toldOpen
                    statuses.yield(EventStreamStatus(kind: .opened, connection: state.toldOpen))
                }
                return true
            }
        }
    }
}
