import Foundation

/// What differs by platform in the benchmarks, in one place (`Scripts/lint-platforms`: a target's shim). The rest
/// of the target calls these, and the C library through Foundation.
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
    /// socket gets `SO_NOSIGPIPE` (``prepareSocket(_:)``) first, a call that costs little next to the write.
    static func send(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            prepareSocket(descriptor)
            return Foundation.send(descriptor, bytes, count, 0)
        #else
            return Foundation.send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// This process's resource usage so far (`getrusage(RUSAGE_SELF)`: Glibc imports `RUSAGE_SELF` as an enum).
    static func resourceUsage() -> rusage {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        return usage
    }

    /// The resident set size now, in bytes: Linux's /proc/self/statm; `nil` where there is no /proc (Darwin).
    static func residentBytes() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return nil }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The resident set size in kilobytes, now or (`peak`) at its highest since ``resetPeakResidentMemory()``:
    /// Linux's `VmRSS` and `VmHWM` of /proc/self/status; `nil` where there is no /proc (Darwin).
    static func residentKilobytes(peak: Bool) -> Double? {
        let name = peak ? "VmHWM:" : "VmRSS:"
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes
    }

    /// Resets the peak of ``residentKilobytes(peak:)`` to the resident set size now (Linux's
    /// /proc/self/clear_refs); nothing where there is no /proc.
    static func resetPeakResidentMemory() {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
        try? handle.write(contentsOf: Data("5".utf8))
        try? handle.close()
    }
}
