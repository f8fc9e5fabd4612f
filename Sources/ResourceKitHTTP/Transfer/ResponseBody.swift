public import Foundation

/// A response whose head has arrived and whose body arrives as it comes: what
/// ``NetworkSession/bytes(_:)`` returns.
public struct StreamedResponse: Sendable {
    /// The status code.
    public var statusCode: Int
    /// The response headers.
    public var headers: HTTPHeaders
    /// The URL of the request this answers.
    public var url: URL?
    /// The body, in chunks as they arrive.
    public var body: ResponseBody

    /// Creates a response.
    /// - Parameters:
    ///   - statusCode: The status code.
    ///   - headers: The headers.
    ///   - url: The request URL.
    ///   - body: The body.
    public init(statusCode: Int, headers: HTTPHeaders = HTTPHeaders(), url: URL? = nil, body: ResponseBody) {
        self.statusCode = statusCode
        self.headers = headers
        self.url = url
        self.body = body
    }

    /// The body's length as the server announced it in `Content-Length`; `nil` when it did not, or announced
    /// something that is not a length.
    public var expectedLength: Int? {
        guard let text = headers["Content-Length"], let length = Int(text), length >= 0 else { return nil }
        return length
    }
}

/// A response body as it arrives: an `AsyncSequence` of chunks, to be iterated once. Chunks are not messages:
/// a reader that falls behind gets what waits in one piece (up to 256 KB).
///
/// The chunks wait in a buffer of a bounded size until you read them. A transport that can wait for room
/// does (`StubTransport` and your own, through ``Writer/write(_:)``); `URLSession` on Linux cannot stop
/// reading a response, so ``URLSessionTransport`` puts what it outruns the reader by in an unlinked
/// temporary file, read back in order. Cancelling
/// the task that iterates, or dropping the body and its iterator unread, stops the transfer.
public struct ResponseBody: AsyncSequence, Sendable, Equatable {
    /// A chunk of the body.
    public typealias Element = Data
    /// The error that ends a body early: the connection failed, the transfer was cancelled.
    public typealias Failure = NetworkError

    let channel: BodyChannel
    /// Held by every copy of the body and by its iterator: when the last goes, the transfer stops.
    let reader: BodyReader

    init(channel: BodyChannel) {
        self.channel = channel
        self.reader = BodyReader(channel: channel)
    }

    /// A body whose chunks a transport writes through `writer`.
    /// - Parameter limit: How many unread bytes ``Writer/write(_:)`` lets wait before it waits for the reader;
    ///   at least one chunk always fits.
    /// - Returns: The body, for the response, and its writer, for the transport.
    public static func makeStream(bufferingLimit limit: Int = 1 << 20) -> (body: ResponseBody, writer: Writer) {
        let channel = BodyChannel(limit: Swift.max(1, limit))
        return (ResponseBody(channel: channel), Writer(channel: channel))
    }

    /// A body for a writer that cannot wait: past `limit`, chunks go to an unlinked temporary file and are
    /// read back in order, so a slow reader costs disk instead of memory.
    static func makeSpillingStream(bufferingLimit limit: Int = 1 << 20) -> (body: ResponseBody, writer: Writer) {
        let channel = BodyChannel(limit: Swift.max(1, limit), spills: true)
        return (ResponseBody(channel: channel), Writer(channel: channel))
    }

    /// A body that is all there already.
    /// - Parameter data: The whole body; an empty one has no chunk.
    public init(_ data: Data) {
        let channel = BodyChannel(limit: Swift.max(1, data.count))
        if !data.isEmpty { _ = channel.offer(data) }
        channel.finish(NetworkError?.none)
        self.init(channel: channel)
    }

    /// Two bodies are equal when they are the same stream.
    public static func == (lhs: ResponseBody, rhs: ResponseBody) -> Bool { lhs.channel === rhs.channel }

    /// Whether an iterator waits for the next chunk: what a test waits for before it reads from another.
    var hasWaitingReader: Bool { channel.hasWaitingReader }

    /// Makes the iterator; a body is meant to be read once.
    public func makeAsyncIterator() -> Iterator { Iterator(channel: channel, reader: reader) }

    /// Reads the chunks in order.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: BodyChannel
        let reader: BodyReader

        /// The next chunk, waiting for it; `nil` at the end of the body.
        /// - Throws: ``NetworkError`` when the transfer failed, or `.cancelled` when the task was cancelled.
        public mutating func next() async throws(NetworkError) -> Data? {
            try await channel.next()
        }

        /// The next chunk, for an isolated caller.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> Data? {
            try await channel.next()
        }
    }

    /// Reads the whole body.
    /// - Parameter limit: The most bytes to accept.
    /// - Returns: The body.
    /// - Throws: ``NetworkError/invalidResponse(_:)`` when the body is longer than `limit` (the transfer is
    ///   stopped), or the error that ended the transfer.
    public func collect(upTo limit: Int) async throws(NetworkError) -> Data {
        var data = Data()
        for try await chunk in self {
            guard chunk.count <= limit - data.count else {
                cancel()
                throw .invalidResponse("the response body is longer than \(limit) bytes")
            }
            data.append(chunk)
        }
        return data
    }

    /// Stops the transfer: a reader waiting, or reading later, gets ``NetworkError/cancelled``.
    public func cancel() { channel.terminate(with: .cancelled) }

    /// Where a transport writes a ``ResponseBody``.
    public struct Writer: Sendable {
        let channel: BodyChannel

        /// Adds a chunk, waiting while the buffer is full.
        /// - Parameter chunk: The chunk; an empty one adds nothing.
        /// - Throws: ``NetworkError/cancelled`` once the reader is gone or cancelled, or the body ended: stop
        ///   the transfer.
        public func write(_ chunk: Data) async throws(NetworkError) {
            try await channel.write(chunk)
        }

        /// Adds a chunk without waiting, for a source that cannot pause.
        /// - Parameter chunk: The chunk.
        /// - Returns: `false` once the reader is gone or cancelled, or the body ended: stop the transfer.
        @discardableResult
        public func yield(_ chunk: Data) -> Bool { channel.offer(chunk) }

        /// Ends the body; the reader gets the chunks written, then the end, or `error`.
        /// - Parameter error: Why the body ended early; `nil` at its end.
        public func finish(throwing error: NetworkError? = nil) { channel.finish(error) }

        /// Runs `handler` once when the reader is gone or cancelled before the body ended, or at once if it
        /// already is: where a transport stops its transfer.
        /// - Parameter handler: What stops the transfer.
        public func onTermination(_ handler: @escaping @Sendable () -> Void) { channel.onTermination(handler) }
    }
}
