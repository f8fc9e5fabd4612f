import Foundation

/// What differs by platform in persistence, in one place (`Scripts/lint-platforms`: a target's shim).
enum Platform {
    /// Flushes a file's (or a directory's) data and metadata to the storage medium, through the drive's cache:
    /// `fcntl(F_FULLFSYNC)` on Darwin, where `fsync` moves the data to the drive but not through its cache
    /// (fsync(2): only `F_FULLFSYNC` survives a power loss), and `fsync` where a volume refuses `F_FULLFSYNC`
    /// (network and FUSE file systems, as SQLite falls back) and on other platforms, where `fsync` flushes
    /// through the drive's cache already.
    /// - Returns: Whether it succeeded; `errno` says why not.
    static func fullSync(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) == 0 { return true }
        #endif
        return fsync(descriptor) == 0
    }
}
