import Foundation

/// What differs by platform in the HTTP layer, in one place (`Scripts/lint-platforms`: a target's shim; each
/// branch is listed in CONTRIBUTING).
enum Platform {
    /// The stream `URLSession` reads a streamed request body from.
    ///
    /// On Apple platforms `URLSession` takes a body stream over (its delegate, its run loop), which a subclass
    /// of `InputStream` that only reads cannot be: it gets the input of a bound pair, whose output a thread of
    /// its own fills from `body` (``BodyPump``); a body that fails runs `stop`, which cancels the task, so that
    /// the body is never sent short. swift-corelibs-foundation has no bound pairs, and reads a body stream
    /// through `read(_:maxLength:)` alone, on its own queue: it reads `body` itself.
    static func sessionStream(for body: BodyInputStream, stop: @escaping @Sendable () -> Void) -> InputStream {
        #if canImport(Darwin)  // platforms: Darwin's URLSession cannot read a stream subclass; corelibs has no pairs
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: BodyPump.bufferSize, inputStream: &input, outputStream: &output)
            guard let input, let output else { return body }
            BodyPump.start(body, into: output, failed: stop)
            return input
        #else
            return body
        #endif
    }
}
