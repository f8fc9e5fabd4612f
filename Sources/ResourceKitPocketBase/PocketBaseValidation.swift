import Foundation
public import ResourceKitHTTP

/// Accepts 2xx and decodes PocketBase's error body — `{"status","message","data":{field:{"code","message"}}}`
/// — into `NetworkError/server(_:)` with the field messages. A body of another shape falls back to
/// `NetworkError/httpStatus(code:body:headers:)`.
public struct PocketBaseValidation: ValidationProviding {
    /// Creates the provider.
    public init() {}

    private struct Body: Decodable {
        struct Field: Decodable {
            var message: String
        }
        var message: String
        var data: [String: Field]?
    }

    /// Throws `NetworkError/server(_:)` for a non-2xx response with PocketBase's error body.
    public func validate(_ response: HTTPResponse) throws(NetworkError) {
        guard !(200..<300).contains(response.statusCode) else { return }
        guard let body = try? JSONDecoder().decode(Body.self, from: response.body) else {
            throw .httpStatus(code: response.statusCode, body: response.body, headers: response.headers)
        }
        throw .server(
            ServerError(
                status: response.statusCode,
                message: body.message,
                fieldErrors: (body.data ?? [:]).mapValues(\.message),
                body: response.body,
                headers: response.headers))
    }
}
