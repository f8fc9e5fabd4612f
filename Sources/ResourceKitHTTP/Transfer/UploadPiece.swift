#if canImport(FoundationNetworking)
    package import Foundation
    import FoundationNetworking
#else
    package import Foundation
#endif

/// Where a transfer tells how far it has come (ResourceKitTransfer's `TransferProgress`).
package protocol ProgressReporting: Sendable {
    /// Takes the transfer's next step.
    func report(_ step: TransferStep)
}

/// What a transfer tells its ``ProgressReporting``, in order: a start, advances, and a finish; a transfer that
/// sends its body again (an attempt, a redirect) starts again.
package enum TransferStep: Sendable {
    /// The transfer (re)started: `completed` bytes are there already, of `expected`. In 64 bits: a file may be
    /// larger than a 32-bit `Int` (watchOS devices) counts.
    case started(completed: Int64, expected: Int64?)
    /// `count` more bytes went through.
    case advanced(by: Int)
    /// The transfer ended, done or not.
    case finished
}

/// A request body another module composes of pieces (ResourceKitTransfer's multipart form): encoded in memory
/// when it can be kept, streamed piece by piece when the session sends it.
package protocol ComposedBody: Sendable {
    var contentType: String { get }
    /// Whether it must be streamed: a piece is a file.
    var streams: Bool { get }
    /// The whole body in memory.
    func encoded() throws(NetworkError) -> Data
    /// The body as the pieces of a streamed upload.
    func pieces() throws(NetworkError) -> [UploadPiece]
    /// Whether it is the same body as `other`, for ``RequestBody``'s `==`.
    func isEqual(to other: any ComposedBody) -> Bool
}

/// A piece of a composed request body, streamed when the session sends it.
package enum UploadPiece: Sendable {
    case bytes(Data)
    /// A file, read from the start when its piece comes. `delimiter`, when set, must not occur in it: a
    /// multipart boundary.
    case file(URL, size: Int64, delimiter: Data?)
}

extension UploadPiece {
    /// Checks that a file can be read as an upload's piece and returns its size.
    /// - Throws: ``NetworkError/file(_:)`` for a URL that is not a file URL, or a file that is missing, not
    ///   a regular file, or not readable.
    package static func size(ofFileAt url: URL) throws(NetworkError) -> Int64 {
        guard url.isFileURL else { throw .file("\(url.absoluteString) is not a file URL") }
        let path = url.path
        // Looked at before it is opened: opening a FIFO would wait for a writer.
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .file("cannot read the file to upload at \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .file("the upload's \(path) is not a regular file") }
        let descriptor = openForReading(path)
        guard descriptor >= 0 else {
            throw .file("cannot read the file to upload at \(path): \(String(cString: strerror(errno)))")
        }
        closeDescriptor(descriptor)
        // `off_t`: 64 bits on every platform Swift runs on, whatever the width of `Int`.
        return Int64(info.st_size)
    }
}
