import Foundation

/// What differs by platform in the integration tests, in one place (`Scripts/lint-platforms`: a target's shim).
/// The rest of the target calls these, and the C library through Foundation.
enum Platform {
    /// The socket type of a TCP socket, for `socket(AF_INET, Platform.streamSocket, 0)`: Glibc imports
    /// `SOCK_STREAM` as an enum, Darwin and Musl as an `Int32`.
    #if canImport(Glibc)
        static let streamSocket = Int32(SOCK_STREAM.rawValue)
    #else
        static let streamSocket = SOCK_STREAM
    #endif

    /// Makes writes to `descriptor` fail with `EPIPE` instead of raising SIGPIPE once the peer has closed:
    /// `SO_NOSIGPIPE` on Darwin, where the option belongs to the socket; nothing elsewhere, where ``send(_:_:_:)``
    /// passes `MSG_NOSIGNAL` with each write.
    static func prepareSocket(_ descriptor: Int32) {
        #if canImport(Darwin)
            var on: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// `send(2)` of `count` bytes at `bytes` that never raises SIGPIPE, whatever the socket: a peer that closed
    /// makes it return -1 with `errno` `EPIPE`, on every platform. Darwin has no per-call flag for that, so the
    /// socket gets `SO_NOSIGPIPE` (``prepareSocket(_:)``) first, a call that costs nothing next to the write.
    static func send(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            prepareSocket(descriptor)
            return Foundation.send(descriptor, bytes, count, 0)
        #else
            return Foundation.send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// How to run this test binary again: the executable, and the arguments that must come first to select the
    /// tests' bundle (the caller adds the testing library's own, `--filter` among them).
    ///
    /// On Linux the test binary is an executable of its own (`ResourceKitPackageTests.xctest`): this one, as the
    /// kernel names it, with no arguments to add. On Darwin the tests are a bundle that a host process loads, and
    /// `CommandLine.arguments.first` is that host, not the tests: `swift test` runs Swift Testing's tests as
    /// `swiftpm-testing-helper --test-bundle-path BINARY <its own arguments> --testing-library swift-testing`, and
    /// the helper requires `--test-bundle-path BINARY` as its first two arguments, `dlopen`s the binary and hands
    /// its whole command line to the bundle's `main`. So the child is the same host with that pair first, which
    /// keeps the bundle; the parent's other arguments (its `--filter`, an event stream it writes) are left out,
    /// and the caller's `--testing-library swift-testing --filter …` follow, which the bundle's `main` reads as
    /// a test binary's. The child inherits the parent's environment (the `DYLD_*` paths `swift test` sets).
    /// Under a host that takes no `--test-bundle-path` (Xcode's `xctest`), there is no such command: the pair is
    /// missing and the child fails, as the tests that need one say (run them with `swift test`).
    static let testCommand: (executable: URL, arguments: [String]) = {
        // platforms: Darwin runs the tests in a host that loads their bundle, Linux runs the test executable.
        #if canImport(Darwin)
            let arguments = CommandLine.arguments
            let bundle = arguments.firstIndex(of: "--test-bundle-path").map { Array(arguments[$0...].prefix(2)) }
            return (Bundle.main.executableURL ?? URL(fileURLWithPath: arguments.first ?? ""), bundle ?? [])
        #else
            return (URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath(), [])
        #endif
    }()

    /// The files this process holds open and has unlinked, each as "PATH (deleted)"; `nil` where the system does
    /// not list them. Linux's /proc/self/fd links to each open file's path, with " (deleted)" after it once the file
    /// is unlinked; Darwin has no /proc.
    static func unlinkedOpenFiles() -> [String]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
            .filter { $0.hasSuffix("(deleted)") }
    }
}
