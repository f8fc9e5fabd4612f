import Foundation
import ResourceKitHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Timeouts `URLSession` cannot use: Linux's converts them with `Int(seconds) * 1000`, which traps on NaN,
/// infinities and huge values. (Requests on a real socket: `SocketTests`.)
@Suite struct URLSessionTransportTests {
    static let unusable: [TimeInterval] = [.nan, .infinity, -.infinity, 1e300, 1e9 + 1, 0, -5]

    @Test(arguments: [Duration.zero, .seconds(-5), .seconds(1_000_000_001), .seconds(Int64.max), .seconds(1e20)])
    func aTimeoutThatIsNotAUsableDurationMeansNone(timeout: Duration) {
        #expect(URLSessionTransport(timeout: timeout).session.configuration.timeoutIntervalForRequest == 1e9)
    }

    @Test(arguments: unusable)
    func aConfiguredTimeoutThatIsNotAUsableNumberOfSecondsMeansNone(timeout: TimeInterval) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        #expect(
            URLSessionTransport(configuration: configuration).session.configuration.timeoutIntervalForRequest == 1e9)
    }

    @Test func aUsableTimeoutIsKept() {
        #expect(
            URLSessionTransport(timeout: .milliseconds(2500)).session.configuration.timeoutIntervalForRequest == 2.5)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1e9
        #expect(
            URLSessionTransport(configuration: configuration).session.configuration.timeoutIntervalForRequest == 1e9)
    }

    /// Only where `URLSession` would trap on such a timeout (`Platform.urlSessionTrapsOnUnusableTimeouts`).
    @Test(
        .enabled(if: Platform.urlSessionTrapsOnUnusableTimeouts, "Apple's URLSession takes any timeout"),
        arguments: [TimeInterval.nan, .infinity, 1e300])
    func aSessionWhoseTimeoutWouldCrashURLSessionFailsEveryRequestClearly(timeout: TimeInterval) async {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = timeout
        let transport = URLSessionTransport(session: URLSession(configuration: configuration))
        // Nothing listens on the discard port, and nothing is sent: the request fails before it starts.
        let request = URLRequest(url: URL(string: "http://127.0.0.1:9/x")!)
        await #expect(
            throws: NetworkError.invalidRequest(
                "the URLSession's timeoutIntervalForRequest (\(timeout)) is not a usable number of seconds")
        ) { try await transport.send(request) }
    }
}
