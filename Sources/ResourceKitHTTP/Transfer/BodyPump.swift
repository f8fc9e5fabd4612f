import Foundation

/// Copies a streamed body into the output of a bound stream pair, whose input `URLSession` reads on Apple
/// platforms (``Platform/sessionStream(for:stop:)``): on a thread of its own, since the writes wait for the
/// reader, until the body ends (the output is closed: the reader sees the end), the body fails (`failed` runs
/// first, to cancel the task, so that the body is never sent short), or the reader goes (a write fails).
enum BodyPump {
    /// The pair's buffer, and how much one read of the body asks for.
    static let bufferSize = 64 * 1024

    /// Runs ``run(_:into:failed:)`` on a thread of its own.
    static func start(_ body: InputStream, into output: OutputStream, failed: @escaping @Sendable () -> Void) {
        let ends = Ends(body: body, output: output)
        Thread.detachNewThread { run(ends.body, into: ends.output, failed: failed) }
    }

    /// Copies `body` into `output` until one of them ends; returns when it has closed both.
    static func run(_ body: InputStream, into output: OutputStream, failed: () -> Void) {
        body.open()
        output.open()
        defer {
            body.close()
            output.close()
        }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: bufferSize)
        defer { buffer.deallocate() }
        while true {
            let count = body.read(buffer, maxLength: bufferSize)
            if count < 0 { return failed() }
            if count == 0 { return }
            var written = 0
            while written < count {
                let wrote = output.write(buffer + written, maxLength: count - written)
                // The reader went: the task ended or was cancelled.
                guard wrote > 0 else { return }
                written += wrote
            }
        }
    }

    /// The two streams, handed to the pump's thread, which alone uses them from then on.
    private final class Ends: @unchecked Sendable {
        let body: InputStream
        let output: OutputStream

        init(body: InputStream, output: OutputStream) {
            self.body = body
            self.output = output
        }
    }
}
