import Foundation

/// Ends the transfer when the last copy of a body and its iterators are gone unread.
final class BodyReader: Sendable {
    let channel: BodyChannel

    init(channel: BodyChannel) { self.channel = channel }

    deinit { channel.terminate(with: .cancelled) }
}

/// The chunks between a transport and the reader of a body.
final class BodyChannel: Sendable {
    private struct State {
        /// Made by the first read of ``hasWaitingReader``: a body nobody asks that of allocates nothing for it.
        var observation: ObservationPoint?
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

    /// Whether a reader waits for the next chunk. Observation hears when a reader starts to wait (not when it
    /// is answered), so that a test can wait for it.
    var hasWaitingReader: Bool {
        let (observation, waits) = state.withLock { state in
            if state.observation == nil { state.observation = ObservationPoint() }
            return (state.observation, state.reader != nil)
        }
        observation?.track()
        return waits
    }

    /// Adds a chunk whatever the buffer holds; `false` once the body is over for the writer.
    func offer(_ chunk: Data) -> Bool {
        if chunk.isEmpty { return state.withLock { !$0.isTerminated && $0.end == nil } }
        var failed = false
        let (accepted, reader, batch) = state.withLock {
            state -> (Bool, CheckedContinuation<Result<Data?, NetworkError>, Never>?, Data) in
            guard !state.isTerminated, state.end == nil else { return (false, nil, Data()) }
            // A waiting reader has read everything: the chunk is its next.
            if let reader = state.reader.take() { return (true, reader, chunk) }
            // Once spilling, everything newer spills until the reader has caught up: order holds.
            if spills, state.spilled > 0 || state.buffered + chunk.count > limit {
                if Self.spill(chunk, in: &state) { return (true, nil, Data()) }
                // Kept in memory, it would come before the older bytes on disk: the body fails instead.
                if state.spilled > 0 {
                    failed = true
                    return (false, nil, Data())
                }
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            return (true, nil, Data())
        }
        if failed {
            terminate(with: .file("could not keep a response body that its reader has not caught up with on disk"))
            return false
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
                // Set when the reader parks while something tracks ``hasWaitingReader``.
                var observation: ObservationPoint?
                let (now, writer, stop) = state.withLock {
                    state -> (
                        Result<Data?, NetworkError>?, CheckedContinuation<Result<Void, NetworkError>, Never>?,
                        (@Sendable () -> Void)?
                    ) in
                    // One reader at a time: a second one would take the first's place and leave it waiting.
                    if state.reader != nil {
                        return (.failure(.invalidRequest("the body is read by another iterator already")), nil, nil)
                    }
                    if state.buffered > 0 || state.spilled > 0 {
                        let batch = Self.takeBatch(&state)
                        // A spill file that could not be read ended the body: the transfer stops too.
                        if state.isTerminated, batch.isEmpty, case .some(.some(let error)) = state.end {
                            return (.failure(error), nil, state.onTermination.take())
                        }
                        let writer = state.buffered < limit ? state.writer.take() : nil
                        return (.success(batch), writer, nil)
                    }
                    if let end = state.end { return (end.map { .failure($0) } ?? .success(nil), nil, nil) }
                    if Task.isCancelled { return (.failure(.cancelled), nil, nil) }
                    state.reader = continuation
                    observation = state.observation
                    return (nil, state.writer.take(), nil)
                }
                writer?.resume(returning: .success(()))
                stop?()
                if let now { continuation.resume(returning: now) } else { observation?.changed() }
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
///
/// Appends gather in memory up to ``writeSize`` and reach the file in one write: a writer that cannot wait
/// (URLSession's delegate queue) then makes one system call per 256 KB instead of one per 16 KB chunk, and
/// falls behind the socket less.
final class SpillFile: Sendable {
    private struct Offsets {
        var read = 0
        var write = 0
        /// Appended, not written yet: the bytes after `write`.
        var pending = Data()
    }

    /// How much gathers before it is written.
    static let writeSize = 256 * 1024

    private let descriptor: Int32
    private let offsets = Locked(Offsets())

    init?() {
        var template = Array((NSTemporaryDirectory() + "/resourcekit-body-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkstemp($0) } ?? -1
        }
        guard descriptor >= 0 else { return nil }
        // Not inherited by a process the app starts.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
        self.descriptor = descriptor
    }

    /// A spill file on an open descriptor, which it closes: what a test uses to make the disk refuse writes.
    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Adds the chunk after what was appended; `false` when the disk refuses what has gathered.
    func append(_ chunk: Data) -> Bool {
        offsets.withLock { offsets in
            if offsets.pending.isEmpty { offsets.pending.reserveCapacity(Self.writeSize + chunk.count) }
            offsets.pending.append(chunk)
            if offsets.pending.count < Self.writeSize || flush(&offsets) { return true }
            // Refused: the chunk is not kept (the caller decides what becomes of it); what gathered before waits.
            offsets.pending.removeLast(chunk.count)
            return false
        }
    }

    /// Writes what has gathered; `false` when the disk refuses it.
    private func flush(_ offsets: inout Offsets) -> Bool {
        var written = 0
        let ok = offsets.pending.withUnsafeBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return bytes.isEmpty }
            while written < bytes.count {
                let count = pwrite(descriptor, base + written, bytes.count - written, off_t(offsets.write + written))
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                written += count
            }
            return true
        }
        guard ok else { return false }
        offsets.write += written
        offsets.pending.removeAll(keepingCapacity: true)
        return true
    }

    /// Reads the next `count` bytes appended.
    func read(upTo count: Int) -> Result<Data, NetworkError> {
        offsets.withLock { offsets in
            if offsets.write - offsets.read < count, !offsets.pending.isEmpty, !flush(&offsets) {
                return .failure(.file("could not keep a spilled response body: \(String(cString: strerror(errno)))"))
            }
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
