// The shim (named like Sources/ResourceKitHTTP/Support/Platform.swift): the one file that may import the C
// library, branch on the platform and name the platform-only constants.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

package enum Platform {
    /// `SOCK_STREAM` as the `Int32` that `socket(2)` takes everywhere.
    #if canImport(Glibc)
        package static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        package static let streamSocket = SOCK_STREAM
    #endif

    /// A TCP socket that never raises SIGPIPE.
    package static func socket() -> Int32 {
        let descriptor = Glibc_socket(AF_INET, streamSocket, 0)
        #if canImport(Darwin)
            var on: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return descriptor
    }

    /// Sends without SIGPIPE: MSG_NOSIGNAL on Linux, SO_NOSIGPIPE (set by `socket()`) on Darwin.
    package static func send(_ descriptor: Int32, _ base: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.send(descriptor, base, count, 0)
        #else
            Glibc.send(descriptor, base, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// A bound pair for a body the library writes: Darwin's URLSession needs a stream it can take over (its
    /// delegate, its run loop), which a subclass is not. swift-corelibs-foundation has no getBoundStreams, and
    /// reads a body stream only through read(_:maxLength:), so Linux keeps the library's own stream.
    package static func boundStreams(bufferSize: Int) -> (InputStream, OutputStream)? {
        #if canImport(Darwin)
            var input: InputStream?
            var output: OutputStream?
            Stream.getBoundStreams(withBufferSize: bufferSize, inputStream: &input, outputStream: &output)
            guard let input, let output else { return nil }
            return (input, output)
        #else
            return nil
        #endif
    }

    /// Flushes a file to the medium: `F_FULLFSYNC` on Darwin (`fsync` where the volume refuses it).
    package static func fullSync(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return true }
        #endif
        return fsync(descriptor) == 0
    }
}
