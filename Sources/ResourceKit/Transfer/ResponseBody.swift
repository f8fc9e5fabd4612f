public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// The body as lines of text: split at `\n`, a `\r` before it dropped, decoded as UTF-8 (invalid bytes
    /// become U+FFFD). A last line without a newline is a line too.
    /// - Parameter maximumLength: The longest line, in bytes, to accept.
    /// - Returns: The lines; a line longer than `maximumLength` ends them with
    ///   ``NetworkError/invalidResponse(_:)`` and stops the transfer.
    public func lines(maximumLength: Int = 1 << 20) -> ResponseLines {
        ResponseLines(body: self, maximumLength: Swift.max(1, maximumLength))
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

/// Lines of a ``ResponseBody``: see ``ResponseBody/lines(maximumLength:)``.
public struct ResponseLines: AsyncSequence, Sendable {
    /// A line, without its line break.
    public typealias Element = String
    /// What ends the lines early.
    public typealias Failure = NetworkError

    let body: ResponseBody
    let maximumLength: Int

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: body.makeAsyncIterator(), body: body, maximumLength: maximumLength)
    }

    /// Reads the lines in order.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseBody.Iterator
        let body: ResponseBody
        let maximumLength: Int
        var pending: [UInt8] = []
        var start = 0
        var isAtEnd = false

        /// The next line; `nil` after the last.
        /// - Throws: The body's error, or ``NetworkError/invalidResponse(_:)`` for a line that is too long.
        public mutating func next() async throws(NetworkError) -> String? {
            try await next(isolation: nil)
        }

        /// The next line, for an isolated caller.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> String? {
            while true {
                if let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    var end = newline
                    if end > start, pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    let line = String(decoding: pending[start..<end], as: UTF8.self)
                    start = newline + 1
                    return line
                }
                if isAtEnd {
                    guard start < pending.count else { return nil }
                    var end = pending.count
                    if pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    let line = String(decoding: pending[start..<end], as: UTF8.self)
                    start = pending.count
                    return line
                }
                guard pending.count - start <= maximumLength else {
                    body.cancel()
                    throw .invalidResponse("a line of the response is longer than \(maximumLength) bytes")
                }
                if start > 0 {
                    pending.removeFirst(start)
                    start = 0
                }
                if let chunk = try await chunks.next(isolation: actor) {
                    pending.append(contentsOf: chunk)
                } else {
                    isAtEnd = true
                }
            }
        }
    }
}

/// Ends the transfer when the last copy of a body and its iterators are gone unread.
final class BodyReader: Sendable {
    let channel: BodyChannel

    init(channel: BodyChannel) { self.channel = channel }

    deinit { channel.terminate(with: .cancelled) }
}

/// The chunks between a transport and the reader of a body.
final class BodyChannel: Sendable {
    private struct State {
        var chunks: [Data] = []
        var first = 0
        var buffered = 0
        /// `nil` while the body goes on; then its end (`nil`) or error.
        var end: NetworkError??
        /// Set when the reader stopped the transfer (cancelled, or gone): nothing more is accepted.
        var isTerminated = false
        var reader: CheckedContinuation<Result<Data?, NetworkError>, Never>?
        var writer: CheckedContinuation<Result<Void, NetworkError>, Never>?
        var onTermination: (@Sendable () -> Void)?
        /// Where chunks past the limit go, for a writer that cannot wait; made on first use.
        var spill: SpillFile?
        /// Bytes in `spill` not read yet: newer than every chunk in memory.
        var spilled = 0
    }

    private let state = Locked(State())
    private let limit: Int
    /// Whether chunks offered past the limit go to a temporary file instead of memory.
    private let spills: Bool

    init(limit: Int, spills: Bool = false) {
        self.limit = limit
        self.spills = spills
    }

    /// Adds a chunk whatever the buffer holds; `false` once the body is over for the writer.
    func offer(_ chunk: Data) -> Bool {
        if chunk.isEmpty { return state.withLock { !$0.isTerminated && $0.end == nil } }
        let (accepted, reader, batch) = state.withLock {
            state -> (Bool, CheckedContinuation<Result<Data?, NetworkError>, Never>?, Data) in
            guard !state.isTerminated, state.end == nil else { return (false, nil, Data()) }
            // A waiting reader has read everything: the chunk is its next.
            if let reader = state.reader.take() { return (true, reader, chunk) }
            // Once spilling, everything newer spills until the reader has caught up: order holds.
            if spills, state.spilled > 0 || state.buffered + chunk.count > limit, Self.spill(chunk, in: &state) {
                return (true, nil, Data())
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            return (true, nil, Data())
        }
        reader?.resume(returning: .success(batch))
        return accepted
    }

    /// Adds a chunk, then waits until the buffer has room.
    func write(_ chunk: Data) async throws(NetworkError) {
        guard offer(chunk) else { throw .cancelled }
        let result: Result<Void, NetworkError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, NetworkError>, Never>) in
                let now: Result<Void, NetworkError>? = state.withLock { state in
                    if state.isTerminated || state.end != nil { return .failure(.cancelled) }
                    if state.buffered < limit || Task.isCancelled { return .success(()) }
                    state.writer = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let writer = state.withLock { state in
                defer { state.writer = nil }
                return state.writer
            }
            writer?.resume(returning: .failure(.cancelled))
        }
        try result.get()
    }

    /// Ends the body for the reader, after the chunks it has not read.
    func finish(_ error: NetworkError?) {
        let (reader, writer) = state.withLock { state in
            guard !state.isTerminated, state.end == nil else {
                return (CheckedContinuation<Result<Data?, NetworkError>, Never>?.none, state.writer.take())
            }
            state.end = .some(error)
            return (state.reader.take(), state.writer.take())
        }
        // A waiting reader has read everything: it gets the end.
        reader?.resume(returning: error.map { .failure($0) } ?? .success(nil))
        writer?.resume(returning: .failure(.cancelled))
    }

    /// The reader stops the transfer: the writer hears it, a waiting reader gets `error`.
    func terminate(with error: NetworkError) {
        let (reader, writer, handler) = state.withLock { state in
            guard !state.isTerminated, state.end == nil else {
                return (
                    CheckedContinuation<Result<Data?, NetworkError>, Never>?.none,
                    CheckedContinuation<Result<Void, NetworkError>, Never>?.none, (@Sendable () -> Void)?.none
                )
            }
            state.isTerminated = true
            state.end = .some(error)
            state.chunks = []
            state.first = 0
            state.buffered = 0
            state.spill = nil
            state.spilled = 0
            return (state.reader.take(), state.writer.take(), state.onTermination.take())
        }
        reader?.resume(returning: .failure(error))
        writer?.resume(returning: .failure(.cancelled))
        handler?()
    }

    func onTermination(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            guard !state.isTerminated else { return true }
            state.onTermination = handler
            return false
        }
        if runNow { handler() }
    }

    /// The next chunk, or what waits in one piece for a reader that fell behind; `nil` at the end.
    func next() async throws(NetworkError) -> Data? {
        let result: Result<Data?, NetworkError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Data?, NetworkError>, Never>) in
                let (now, writer) = state.withLock {
                    state -> (Result<Data?, NetworkError>?, CheckedContinuation<Result<Void, NetworkError>, Never>?) in
                    if state.buffered > 0 || state.spilled > 0 {
                        let batch = Self.takeBatch(&state)
                        if case .some(.some(let error)) = state.end, batch.isEmpty, state.isTerminated {
                            return (.failure(error), nil)
                        }
                        let writer = state.buffered < limit ? state.writer.take() : nil
                        return (.success(batch), writer)
                    }
                    if let end = state.end { return (end.map { .failure($0) } ?? .success(nil), nil) }
                    if Task.isCancelled { return (.failure(.cancelled), nil) }
                    state.reader = continuation
                    return (nil, state.writer.take())
                }
                writer?.resume(returning: .success(()))
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            terminate(with: .cancelled)
        }
        return try result.get()
    }

    /// What waits, oldest first, in one piece of up to 256 KB: the chunks in memory, else a read of the spill
    /// file. Empty when nothing waits; a failed spill read ends the body.
    private static func takeBatch(_ state: inout State) -> Data {
        if state.first < state.chunks.count {
            var chunk = state.chunks[state.first]
            state.chunks[state.first] = Data()
            state.first += 1
            while state.first < state.chunks.count, chunk.count + state.chunks[state.first].count <= spillReadSize {
                chunk.append(state.chunks[state.first])
                state.chunks[state.first] = Data()
                state.first += 1
            }
            state.buffered -= chunk.count
            if state.first == state.chunks.count {
                state.chunks.removeAll(keepingCapacity: true)
                state.first = 0
            }
            return chunk
        }
        guard state.spilled > 0, let spill = state.spill else { return Data() }
        switch spill.read(upTo: min(state.spilled, spillReadSize)) {
        case .success(let chunk):
            state.spilled -= chunk.count
            // Caught up: the file goes; a reader that falls behind again gets a new one.
            if state.spilled == 0 { state.spill = nil }
            return chunk
        case .failure(let error):
            state.spilled = 0
            state.spill = nil
            state.chunks = []
            state.first = 0
            state.buffered = 0
            state.end = .some(error)
            state.isTerminated = true
            return Data()
        }
    }

    /// How much of the spilled body one read returns.
    static let spillReadSize = 256 * 1024

    /// Appends the chunk to the spill file, made if need be; `false` when the file cannot be made or written
    /// (the chunk then waits in memory).
    private static func spill(_ chunk: Data, in state: inout State) -> Bool {
        if state.spill == nil { state.spill = SpillFile() }
        guard let spill = state.spill, spill.append(chunk) else { return false }
        state.spilled += chunk.count
        return true
    }

}

/// An unlinked temporary file: the part of a body its reader has not caught up with, on disk instead of in
/// memory. It is gone with its descriptor.
final class SpillFile: Sendable {
    private let descriptor: Int32
    private let offsets = Locked<(read: Int, write: Int)>((0, 0))

    init?() {
        var template = Array((NSTemporaryDirectory() + "/resourcekit-body-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkstemp($0) } ?? -1
        }
        guard descriptor >= 0 else { return nil }
        template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Writes the chunk after what was written; `false` when the disk refuses it.
    func append(_ chunk: Data) -> Bool {
        offsets.withLock { offsets in
            var written = 0
            let ok = chunk.withUnsafeBytes { bytes -> Bool in
                guard let base = bytes.baseAddress else { return bytes.isEmpty }
                while written < bytes.count {
                    let count = pwrite(
                        descriptor, base + written, bytes.count - written, off_t(offsets.write + written))
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { return false }
                    written += count
                }
                return true
            }
            if ok { offsets.write += written }
            return ok
        }
    }

    /// Reads the next `count` bytes written.
    func read(upTo count: Int) -> Result<Data, NetworkError> {
        offsets.withLock { offsets in
            var data = Data(count: count)
            var done = 0
            let failure: Int32? = data.withUnsafeMutableBytes { bytes in
                guard let base = bytes.baseAddress else { return count == 0 ? nil : EIO }
                while done < count {
                    let read = pread(descriptor, base + done, count - done, off_t(offsets.read + done))
                    if read < 0, errno == EINTR { continue }
                    guard read > 0 else { return read == 0 ? EIO : errno }
                    done += read
                }
                return nil
            }
            if let failure {
                return .failure(.file("could not read a spilled response body: \(String(cString: strerror(failure)))"))
            }
            offsets.read += done
            return .success(data)
        }
    }
}
