extension NetworkSession {
    /// A new sequence of what the session does (requests and their attempts, retries, redirects, credential
    /// refreshes and failures: see `DiagnosticEvent`), and of the kinds a module above adds: with ResourceKit,
    /// the state changes, answers from memory, coalesced callers and store news of its resources, lists and
    /// store (`DiagnosticEvent.Kind.stateChanged`…, declared in ResourceKit).
    ///
    /// These are the events the session's logger receives (`NetworkLogging`), built and redacted once for
    /// both by the session's `LogRedaction`. Every sequence sees every event from the moment it is made, in
    /// the order the library emitted them. While no sequence exists, no event is built but those the logger
    /// asks for: each place that could emit one costs one atomic load. Cancelling the task that iterates it
    /// ends it; a sequence and its iterator that are gone stop collecting.
    /// - Parameter limit: How many unread events the stream keeps, at least 1 and at most 2³⁰ (a larger limit,
    ///   such as `Int.max`, keeps 2³⁰); older ones are dropped first.
    /// - Returns: The stream.
    public nonisolated func diagnostics(bufferingNewest limit: Int = 10_000) -> DiagnosticEvents {
        DiagnosticEvents(reader: feed.events(bufferingNewest: limit))
    }
}

/// The events of ``NetworkSession/diagnostics(bufferingNewest:)``: an `AsyncSequence` that ends
/// when the task iterating it is cancelled.
///
/// Events wait in the sequence until its consumer takes them, at most the newest `limit`; a consumer that
/// falls behind takes them in batches, so a burst of events costs it one wake-up. The sequence stops
/// collecting once it and its iterator are gone.
public struct DiagnosticEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = DiagnosticEvent
    /// The sequence never throws.
    public typealias Failure = Never

    let reader: DiagnosticReader

    /// Makes the iterator; a sequence is meant to be iterated once.
    public func makeAsyncIterator() -> Iterator { Iterator(reader: reader) }

    /// Takes the events in order.
    public struct Iterator: AsyncIteratorProtocol {
        var reader: DiagnosticReader

        /// The next event, waiting for one; `nil` once the iterating task is cancelled.
        public mutating func next() async -> DiagnosticEvent? {
            await reader.next(isolation: nil)
        }

        /// The next event, for an isolated caller; `nil` once the iterating task is cancelled.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> DiagnosticEvent? {
            await reader.next(isolation: actor)
        }
    }
}
