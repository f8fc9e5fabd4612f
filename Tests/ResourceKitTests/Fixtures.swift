import Foundation
import ResourceKit
import ResourceKitTesting
import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session with no deadline, for the model tests: the reference models know nothing of time, and a
/// schedule slowed down by a loaded machine must not meet the default 60 s deadline.
func makeTimelessSession(_ transport: any HTTPTransport) -> NetworkSession {
    NetworkSession(baseURL: "http://test.local/api", transport: transport, timeLimit: nil)
}

/// A schedule test's wait that did not end, with what the store held.
struct StuckSchedule: Error, CustomStringConvertible {
    var description: String
}
