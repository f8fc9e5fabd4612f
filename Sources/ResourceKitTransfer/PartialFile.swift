import Foundation
import ResourceKitHTTP

/// The partial file being written.
///
/// Its bytes are handed to the disk as they come, a few megabytes at a time (`sync_file_range` on Linux,
/// which starts the writing and does not wait), so that the `fsync` before it takes the destination's name
/// waits for the last few megabytes, not for the whole file after the transfer.
final class PartialFile {
    private let handle: FileHandle
    private let path: String
    private var isClosed = false
    /// Where the next write goes, and up to where the disk was asked to write.
    private var written: Int64
    private var handedOver: Int64

    init(handle: FileHandle, path: String, offset: Int64 = 0) {
        self.handle = handle
        self.path = path
        written = offset
        handedOver = offset
    }

    func write(_ chunk: Data) throws(NetworkError) {
        do {
            try handle.write(contentsOf: chunk)
        } catch {
            close()
            throw .file("could not write \(path): \(error.localizedDescription)")
        }
        written += Int64(chunk.count)
        if written - handedOver >= Self.handOverSize, let syncRange = Self.syncFileRange {
            // SYNC_FILE_RANGE_WRITE: start writing the range, without waiting. A failure here is harmless: the
            // `fsync` at the end still writes everything, and reports what fails.
            _ = syncRange(handle.fileDescriptor, handedOver, written - handedOver, 2)
            handedOver = written
        }
    }

    static let handOverSize: Int64 = 8 << 20

    /// glibc's `sync_file_range`, looked up at run time, by name, where the C library has it: its declaration
    /// needs `_GNU_SOURCE`, which Swift's import of the C library does not set. Other C libraries have none (a
    /// null handle finds nothing on Darwin), and the whole file is written at the final `fsync` there.
    private static let syncFileRange: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
        guard let symbol = dlsym(nil, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
    }()

    /// Flushes the file to disk and closes it.
    func finish() throws(NetworkError) {
        do {
            try handle.synchronize()
            try handle.close()
            isClosed = true
        } catch {
            close()
            throw .file("could not flush \(path): \(error.localizedDescription)")
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? handle.close()
    }

    deinit { close() }
}
