import Foundation

/// What differs by platform in these tests, in one place (`Scripts/lint-platforms`: a target's shim).
enum Platform {
    /// Whether `URLSession` is swift-corelibs-foundation's (in FoundationNetworking), which converts a request's
    /// timeout with `Int(seconds) * 1000` and so traps on NaN, infinities and huge values: `URLSessionTransport`
    /// refuses a session with such a timeout there. Apple's `URLSession` takes any timeout.
    #if canImport(FoundationNetworking)
        static let urlSessionTrapsOnUnusableTimeouts = true
    #else
        static let urlSessionTrapsOnUnusableTimeouts = false
    #endif
}
