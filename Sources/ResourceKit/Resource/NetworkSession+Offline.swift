#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

extension NetworkSession {
    /// A session that never reaches a server, for resources built in a fixed state.
    static let offline = NetworkSession(baseURL: "http://offline.invalid", transport: OfflineTransport())
}

private struct OfflineTransport: HTTPTransport {
    func send(_ request: URLRequest) async throws(NetworkError) -> HTTPResponse {
        throw .transport(code: .notConnectedToInternet, message: "this resource was created without a session")
    }
}
