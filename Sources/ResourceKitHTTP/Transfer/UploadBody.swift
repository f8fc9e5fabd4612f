#if canImport(FoundationNetworking)
    import Foundation
    package import FoundationNetworking
#else
    package import Foundation
#endif

/// A request body that is sent as a stream: its pieces, in memory or in files, read as the transport sends
/// them. One per call, made when the request is built; every attempt and every redirect hop that repeats
/// the body reads it again through a fresh ``BodyInputStream``.
final class UploadBody: Sendable {
    /// A piece of the body: a composed body's (``UploadPiece``), or a stream of the caller's, which can be read
    /// once.
    enum Piece {
        case composed(UploadPiece)
        case stream(OneShotStream)
    }

    let pieces: [Piece]
    /// The body's length in bytes, when every piece's is known.
    let length: Int64?
    let progress: (any ProgressReporting)?
    /// Whether every piece can be read again: no stream of the caller's.
    let isReplayable: Bool
    /// What made the last stream fail, if it did: a file that vanished, a boundary found in a file.
    private let failure = Locked<NetworkError?>(nil)

    init(pieces: [Piece], progress: (any ProgressReporting)?) {
        self.pieces = pieces
        self.progress = progress
        var length: Int64 = 0
        var known = true
        var replayable = true
        for piece in pieces {
            switch piece {
            case .composed(.bytes(let data)): length += Int64(data.count)
            case .composed(.file(_, let size, _)): length += size
            case .stream:
                known = false
                replayable = false
            }
        }
        self.length = known ? length : nil
        self.isReplayable = replayable
    }

    /// A fresh stream of the whole body, the progress restarted at zero.
    /// - Throws: ``NetworkError/transport(code:message:)`` (`requestBodyStreamExhausted`) when the body
    ///   holds a stream of the caller's that was read already.
    func makeStream() throws(NetworkError) -> BodyInputStream {
        guard let streams = claimStreams() else { throw Self.exhausted }
        failure.withLock { $0 = nil }
        progress?.report(.started(completed: 0, expected: length))
        return BodyInputStream(self, claimed: streams)
    }

    /// The caller's streams of the stream pieces, in order; `nil` when one was claimed already.
    func claimStreams() -> [InputStream]? {
        var streams: [InputStream] = []
        for piece in pieces {
            guard case .stream(let oneShot) = piece else { continue }
            guard let stream = oneShot.take() else { return nil }
            streams.append(stream)
        }
        return streams
    }

    static let exhausted = NetworkError.transport(
        code: .requestBodyStreamExhausted,
        message: "the request body is a stream, which was sent once and cannot be sent again")

    /// The error the last stream failed with, if it did; cleared.
    func takeFailure() -> NetworkError? {
        failure.withLock { failure in
            defer { failure = nil }
            return failure
        }
    }

    fileprivate func fail(_ error: NetworkError) {
        failure.withLock { $0 = $0 ?? error }
    }
}

/// A stream the caller gave as a body (``RequestBody/stream(_:contentType:)``): handed out once, to the
/// first attempt; afterwards the body cannot be sent again.
final class OneShotStream: @unchecked Sendable {
    // Safe to share: `stream` is read only by the one caller `take()` returns it to, under the lock.
    private nonisolated(unsafe) let stream: InputStream
    private let taken = Locked(false)

    init(_ stream: InputStream) { self.stream = stream }

    /// The stream, the first time; `nil` afterwards.
    func take() -> InputStream? {
        let first = taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
        return first ? stream : nil
    }
}

/// The `InputStream` a transport reads an ``UploadBody`` from: its pieces one after the other, files read
/// from disk a buffer at a time, so that a large file costs no memory. It counts the bytes it hands out in
/// the body's progress.
///
/// It is only ever read synchronously, through `read(_:maxLength:)`: by `URLSession` on Linux, on its own
/// thread; by ``BodyPump`` on Apple platforms, whose `URLSession` gets a bound pair instead
/// (``Platform/sessionStream(for:stop:)``); by `StubTransport` and other transports, anywhere, once.
// platforms: a subclass that only reads is sound wherever nothing schedules it on a run loop (see above).
final class BodyInputStream: InputStream {
    let body: UploadBody
    /// The caller's streams of the body's stream pieces; `nil` until claimed, at the first read of a stream
    /// made by `buildRequest` (the session claims them when it makes each hop's stream).
    private var streams: [InputStream]?
    private var index = 0
    /// Which of `streams` the next stream piece reads.
    private var streamIndex = 0
    /// How far into the current piece: bytes of a `.bytes` piece.
    private var offset = 0
    /// The open file of a `.file` piece.
    private var descriptor: Int32 = -1
    /// How much of the current file piece was read.
    private var fileOffset: Int64 = 0
    /// The last bytes of the file read so far, for a delimiter that straddles two reads.
    private var tail = Data()
    private var status: Stream.Status = .notOpen
    private var error: NetworkError?

    init(_ body: UploadBody, claimed streams: [InputStream]?) {
        self.body = body
        self.streams = streams
        super.init(data: Data())
    }

    deinit {
        if descriptor >= 0 { closeDescriptor(descriptor) }
        // URLSession never closes a body stream: a caller's stream cut short by an error or a cancellation is
        // closed here.
        for stream in streams ?? [] where stream.streamStatus != .closed { stream.close() }
    }

    /// A new stream of the same body, from its start. For a body that cannot be read again (a caller's stream),
    /// a stream whose first read fails with `requestBodyStreamExhausted`, so that the transfer ends instead of
    /// sending the body short.
    func restarted() -> BodyInputStream {
        (try? body.makeStream()) ?? BodyInputStream(body, claimed: [])
    }

    override func open() {
        if status == .notOpen { status = .open }
    }

    override func close() {
        if descriptor >= 0 {
            closeDescriptor(descriptor)
            descriptor = -1
        }
        for stream in streams ?? [] { stream.close() }
        if status != .error { status = .closed }
    }

    override var streamStatus: Stream.Status { status }

    override var streamError: (any Error)? { error }

    override var hasBytesAvailable: Bool {
        (status == .open || status == .notOpen) && index < body.pieces.count
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        guard status == .open || status == .notOpen, length > 0 else { return status == .error ? -1 : 0 }
        status = .open
        var count = 0
        while count < length, index < body.pieces.count {
            let step: (count: Int, ended: Bool)?
            switch body.pieces[index] {
            case .composed(.bytes(let data)):
                let take = min(length - count, data.count - offset)
                if take > 0 {
                    data.withUnsafeBytes { raw in
                        guard let base = raw.baseAddress else { return }
                        (buffer + count).update(from: base.assumingMemoryBound(to: UInt8.self) + offset, count: take)
                    }
                }
                offset += take
                step = (take, offset >= data.count)
            case .composed(.file(let url, let size, let delimiter)):
                step = readFile(url, size: size, delimiter: delimiter, into: buffer + count, maxLength: length - count)
            case .stream:
                if streams == nil { streams = body.claimStreams() ?? [] }
                if let streams, streamIndex < streams.count {
                    step = readStream(streams[streamIndex], into: buffer + count, maxLength: length - count)
                } else {
                    step = fail(UploadBody.exhausted)
                }
            }
            let isStream = if case .stream = body.pieces[index] { true } else { false }
            guard let step else {
                status = .error
                return -1
            }
            count += step.count
            if step.ended {
                if isStream { streamIndex += 1 }
                index += 1
                offset = 0
                fileOffset = 0
                tail = Data()
            }
            // A caller's stream is read once per call: its next read may wait, on URLSession's own thread.
            if isStream, count > 0 { break }
        }
        if index >= body.pieces.count { status = .atEnd }
        if count > 0 { body.progress?.report(.advanced(by: count)) }
        return count
    }

    /// Reads from a file piece: how many bytes, and whether the file ended; `nil` on failure.
    ///
    /// The file is sent as long as it was when the request was built: bytes it gained since are not sent, and
    /// a file that became shorter fails the transfer, so that the body is never cut short unnoticed.
    private func readFile(
        _ url: URL, size: Int64, delimiter: Data?, into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int
    ) -> (count: Int, ended: Bool)? {
        if fileOffset >= size {
            if descriptor >= 0 { closeDescriptor(descriptor) }
            descriptor = -1
            return (0, true)
        }
        if descriptor < 0 {
            descriptor = openForReading(url.path)
            if descriptor < 0 { return fail(.file("cannot read \(url.path): \(String(cString: strerror(errno)))")) }
        }
        // At most `maxLength`, an `Int`: what is left of the file may be more than an `Int` holds.
        let got = readAvailable(descriptor, buffer, Int(clamping: min(Int64(maxLength), size - fileOffset)))
        if got < 0 { return fail(.file("cannot read \(url.path): \(String(cString: strerror(errno)))")) }
        if got == 0 {
            return fail(.file("\(url.path) became shorter while it was sent: \(fileOffset) of \(size) bytes"))
        }
        fileOffset += Int64(got)
        if let delimiter, !delimiter.isEmpty {
            var window = tail
            window.append(buffer, count: got)
            if window.range(of: delimiter) != nil {
                let boundary = String(decoding: delimiter.dropFirst(2), as: UTF8.self)
                return fail(.encoding("the boundary \(boundary) occurs in the file \(url.lastPathComponent)"))
            }
            tail = Data(window.suffix(delimiter.count - 1))
        }
        return (got, false)
    }

    /// Reads from a stream piece: how many bytes, and whether it ended; `nil` on failure.
    private func readStream(_ stream: InputStream, into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int)
        -> (count: Int, ended: Bool)?
    {
        if stream.streamStatus == .notOpen { stream.open() }
        let got = stream.read(buffer, maxLength: maxLength)
        if got < 0 {
            let reason = stream.streamError.map { String(describing: $0) } ?? "an unknown error"
            return fail(.file("the request body's stream failed: \(reason)"))
        }
        if got == 0 {
            stream.close()
            return (0, true)
        }
        return (got, false)
    }

    private func fail(_ error: NetworkError) -> (count: Int, ended: Bool)? {
        self.error = error
        body.fail(error)
        return nil
    }
}

// The C calls under names of their own: inside ``BodyInputStream``, `close` and `read` are its methods.

/// Opens without waiting: a file that became a FIFO since it was checked fails to read instead of blocking.
func openForReading(_ path: String) -> Int32 { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }

func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }

/// `read(2)`, again after an interruption.
private func readAvailable(_ descriptor: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int {
    while true {
        let got = read(descriptor, buffer, count)
        if got >= 0 || errno != EINTR { return got }
    }
}

extension URLRequest {
    /// The request with a streamed body (``RequestBody/file(_:contentType:)``, a multipart form with files,
    /// ``RequestBody/stream(_:contentType:)``) read into `httpBody`, for a transport that needs the bytes
    /// (`StubTransport`, `InMemoryBackend`). A request without one is returned as it is.
    /// - Throws: ``NetworkError/file(_:)`` or ``NetworkError/encoding(_:)`` when the body cannot be read.
    package func readingBodyStream() throws(NetworkError) -> URLRequest {
        guard let stream = httpBodyStream else { return self }
        var request = self
        request.httpBodyStream = nil
        var body = Data()
        let size = 64 * 1024
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { buffer.deallocate() }
        stream.open()
        defer { stream.close() }
        while true {
            let count = stream.read(buffer, maxLength: size)
            if count < 0 {
                if let error = stream.streamError as? NetworkError { throw error }
                throw .file("the request body's stream failed: \(stream.streamError.map { "\($0)" } ?? "unknown")")
            }
            if count == 0 { break }
            body.append(buffer, count: count)
        }
        request.httpBody = body
        return request
    }
}
