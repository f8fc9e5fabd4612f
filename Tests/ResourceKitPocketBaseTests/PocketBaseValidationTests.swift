import Foundation
import ResourceKitHTTP
import ResourceKitPocketBase
import ResourceKitTesting
import Testing

/// PocketBase's error bodies become the session's errors, with the message and the fields' messages.
@Suite struct PocketBaseValidationTests {
    @Test func pocketBaseErrorBodyBecomesFieldMessages() async throws {
        let stub = StubTransport()
        let body =
            #"{"status":400,"message":"Failed to create record.","data":{"title":{"code":"validation_required","message":"Cannot be blank."}}}"#
        stub.stub(.post, "/api/posts", status: 400, json: body)
        let session = NetworkSession(
            baseURL: "http://test.local/api", validation: PocketBaseValidation(), transport: stub)
        let error = await #expect(throws: NetworkError.self) {
            try await session.send(Endpoint(.post, "posts", body: .json(["body": "x"])))
        }
        guard let server = error?.serverError else {
            Issue.record("expected .server, got \(String(describing: error))"); return
        }
        #expect(server.status == 400)
        #expect(server.message == "Failed to create record.")
        #expect(server.fieldErrors == ["title": "Cannot be blank."])
    }
}
