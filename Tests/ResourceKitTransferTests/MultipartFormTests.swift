import Foundation
import ResourceKitHTTP
import ResourceKitTesting
import ResourceKitTransfer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct MultipartFormTests {
    @Test func aFormEncodesAsRFC7578Says() throws {
        var form = MultipartForm(boundary: "XyZ-123")
        form.append("Holiday in Spaña", name: "title")
        form.append(Data("JPEG".utf8), name: "attachment", fileName: "beach.jpg", contentType: "image/jpeg")
        form.append("", name: "empty")
        #expect(form.contentType == "multipart/form-data; boundary=XyZ-123")
        let expected =
            "--XyZ-123\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHoliday in Spaña\r\n"
            + "--XyZ-123\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"beach.jpg\"\r\n"
            + "Content-Type: image/jpeg\r\n\r\nJPEG\r\n"
            + "--XyZ-123\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n"
            + "--XyZ-123--\r\n"
        #expect(try form.encoded() == Data(expected.utf8))
        // An empty form is its closing delimiter.
        #expect(try MultipartForm(boundary: "b").encoded() == Data("--b--\r\n".utf8))
        // A random boundary differs from form to form.
        #expect(MultipartForm().boundary != MultipartForm().boundary)
    }

    @Test func theSessionSendsItWithItsContentType() async throws {
        let stub = StubTransport()
        stub.stub(.post, "/api/posts", status: 201, json: "{}")
        let session = NetworkSession(baseURL: "http://test.local/api", transport: stub)
        var form = MultipartForm(boundary: "bound")
        form.append("x", name: "a")
        try await session.send(Endpoint(.post, "posts", body: .multipart(form)))
        let request = try #require(stub.requests.first)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "multipart/form-data; boundary=bound")
        #expect(request.httpBody == (try form.encoded()))
        #expect(RequestBody.multipart(form) == .multipart(form))
    }

    @Test(
        arguments: [
            ("na\"me", nil, nil), ("line\r\nbreak", nil, nil), ("feed\n", nil, nil), ("ok", "file\".txt", nil),
            ("ok", "file\r.txt", nil), ("ok", "file.txt", "text/plain\r\nX-Evil: 1"),
        ] as [(String, String?, String?)])
    func aNameThatWouldBreakThePartApartFailsBeforeAnyRequest(name: String, fileName: String?, type: String?)
        async throws
    {
        let stub = StubTransport()
        stub.stub(.post, "/api/posts", status: 201, json: "{}")
        let session = NetworkSession(baseURL: "http://test.local/api", transport: stub)
        var form = MultipartForm()
        if let fileName {
            form.append(Data("x".utf8), name: name, fileName: fileName, contentType: type ?? "text/plain")
        } else {
            form.append("x", name: name)
        }
        do {
            try await session.send(Endpoint(.post, "posts", body: .multipart(form)))
            Issue.record("a form with \(name.debugDescription) was sent")
        } catch {
            #expect(error.code == .encoding)
        }
        #expect(stub.requestCount == 0)
    }

    @Test(arguments: ["", String(repeating: "b", count: 71), "star*", "ends with space "])
    func anInvalidBoundaryFails(boundary: String) {
        var form = MultipartForm(boundary: boundary)
        form.append("x", name: "a")
        #expect(throws: NetworkError.self) { try form.encoded() }
    }

    @Test func aBoundaryThatOccursInAPartFails() {
        var form = MultipartForm(boundary: "cut")
        form.append("text with --cut inside", name: "a")
        #expect(throws: NetworkError.self) { try form.encoded() }
    }
}
