import ResourceKitHTTP
import Testing

@Suite struct HTTPHeadersTests {
    @Test(arguments: [
        ("Content-Type", "content-type", true), ("X-ID", "x-id", true), ("ÄBC", "äbc", true),
        ("X-@", "X-`", false), ("X-[", "X-{", false), ("X-A", "X-B", false), ("X-A", "X-AA", false),
        ("Accept", "Accepu", false),
    ])
    func namesCompareWithoutCaseAndNothingElse(name: String, other: String, equal: Bool) {
        var headers = HTTPHeaders()
        headers[name] = "1"
        #expect((headers[other] == "1") == equal)
        headers[other] = "2"
        #expect(headers.count == (equal ? 1 : 2))
    }
}
