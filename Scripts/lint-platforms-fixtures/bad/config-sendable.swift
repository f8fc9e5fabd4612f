// expect: config-sendable
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Compiles on Linux, where swift-corelibs-foundation declares the class @unchecked Sendable; not on Darwin.
final class Streaming: Sendable {
    private let configuration: URLSessionConfiguration

    init(configuration: URLSessionConfiguration) { self.configuration = configuration }
}
