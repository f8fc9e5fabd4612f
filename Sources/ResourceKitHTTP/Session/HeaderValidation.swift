/// Checks header fields before they reach `URLRequest`: a line break in a name would put a second header on
/// the wire, and one in a value makes Linux Foundation drop the whole header without a word.
enum HeaderValidation {
    /// Throws unless `name` is an RFC 9110 token and `value` has no CR, LF or NUL. The value is never put
    /// in the error: it may be a credential.
    static func check(name: String, value: String) throws(NetworkError) {
        guard !name.isEmpty, name.utf8.allSatisfy(isTokenCharacter) else {
            throw .invalidRequest("header name \(name.debugDescription) is not an RFC 9110 token")
        }
        guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
            throw .invalidRequest("the value of header '\(name)' contains CR, LF or NUL")
        }
    }

    /// Throws unless `method` is an RFC 9110 token (a method is one): a space or line break in it would change
    /// the request line.
    static func check(method: String) throws(NetworkError) {
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenCharacter) else {
            throw .invalidRequest("method \(method.debugDescription) is not an RFC 9110 token")
        }
    }

    /// Checks every field.
    static func check(_ headers: some Sequence<(key: String, value: String)>) throws(NetworkError) {
        for (name, value) in headers { try check(name: name, value: value) }
    }

    /// RFC 9110 `tchar`: letters, digits and ``!#$%&'*+-.^_`|~``.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
