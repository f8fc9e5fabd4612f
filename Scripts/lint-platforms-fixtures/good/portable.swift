// The portable forms of what the bad fixtures do.
public import ResourceKit

#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// Same access on both sides: Linux's URL types are in FoundationNetworking, Darwin's in Foundation.
public func request(_ url: URL) -> URLRequest { URLRequest(url: url) }

func listen() -> Int32 { Platform.socket() }

func reply(_ client: Int32, _ bytes: [UInt8]) -> Int {
    bytes.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
}

func commit(_ descriptor: Int32) -> Bool { Platform.fullSync(descriptor) }

// A method named send with labels is not the C call.
func forward(_ session: NetworkSession, _ endpoint: Endpoint<Int>) async throws -> Int {
    try await session.send(endpoint, as: Int.self)
}

let child = CommandLine.arguments.first.map { URL(fileURLWithPath: $0) }
let spillThreshold: UInt64 = 1 << 40
let bigLimit = Int64(5_000_000_000)
let smallShift = 1 << 20
let longestRetryAfter = Duration.seconds(Int64.max / 1_000_000_000)

func size(_ info: stat) -> Int { Int(clamping: info.st_size) }
func exactSize(_ info: stat) -> Int? { Int(exactly: info.st_size) }
func slot(of hash: Int, size: Int) -> Int {
    Int(truncatingIfNeeded: UInt(bitPattern: hash).multipliedFullWidth(by: UInt(size)).high)
}
func count(_ text: String) -> Int { Int(text) ?? 0 }

/// Decided by the bytes, not by words.
func isTruncated(received: Int, expected: Int?, error: URLError) -> Bool {
    error.code == .networkConnectionLost && expected.map { received < $0 } == true
}
let message = "the body ended before its announced end"  // not libcurl's words

/// Stores the session, which is Sendable everywhere, not its configuration.
final class Streaming: Sendable {
    private let session: URLSession
    init(configuration: URLSessionConfiguration) { session = URLSession(configuration: configuration) }
    static func make() -> URLSessionConfiguration { .ephemeral }
}

/// Opted out explicitly: the author vouches, the compiler agrees on both platforms.
final class Vouched: @unchecked Sendable {
    private let configuration: URLSessionConfiguration
    init(configuration: URLSessionConfiguration) { self.configuration = configuration }
}

/// A body from a stream Foundation makes, not a subclass; a body the library writes uses the shim's bound pair.
func fileBody(_ url: URL) -> InputStream? { InputStream(url: url) }
func pipedBody(bufferSize: Int) -> (InputStream, OutputStream)? { Platform.boundStreams(bufferSize: bufferSize) }

// platforms: swift-corelibs-foundation crashes when a request is cancelled as a cached response completes.
#if canImport(FoundationNetworking)
    let cachesResponses = false
#else
    let cachesResponses = true
#endif

func pathOfProc() -> String {
    "/proc is only named in this string, which is not code"
}

/* A block comment naming fsync(descriptor), SOCK_STREAM and CommandLine.arguments[0] is not code. */
// Nor is a line comment: import Glibc, #if os(Linux), Int(x.st_size), 1 << 40.
