/// An ordered list of HTTP header fields whose names compare case-insensitively.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Equatable {
        /// The name as it was set.
        public var name: String
        /// The value.
        public var value: String
    }

    private var fields: [Field] = []

    /// Creates an empty header list.
    public init() {}

    /// Creates headers from a dictionary.
    /// - Parameter dictionary: Names and values.
    public init(_ dictionary: [String: String]) {
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) { self[name] = value }
    }

    /// Creates headers from a dictionary literal; a later duplicate name replaces an earlier one.
    /// - Parameter elements: Names and values.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// The value of the field with this name, compared case-insensitively; setting `nil` removes it.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
                if let newValue {
                    fields[index] = Field(name: name, value: newValue)
                } else {
                    fields.remove(at: index)
                }
            } else if let newValue {
                fields.append(Field(name: name, value: newValue))
            }
        }
    }

    /// Whether a field with this name is present.
    /// - Parameter name: The name, compared case-insensitively.
    /// - Returns: `true` when the field is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Returns these headers with every field of `other` set on top.
    /// - Parameter other: The headers that win.
    /// - Returns: The merged headers.
    public func merging(_ other: HTTPHeaders) -> HTTPHeaders {
        var result = self
        for field in other { result[field.name] = field.value }
        return result
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The fields as `Name: value` lines.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// Field names compare case-insensitively; order does not matter.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.count == rhs.count && lhs.fields.allSatisfy { rhs[$0.name] == $0.value }
    }
}

extension String {
    /// Compares ASCII letters without case, byte by byte and without allocating: header names are compared on
    /// every lookup, so this is on every request's path. Anything beyond ASCII compares as `lowercased()` does.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var isASCII = true
        for (a, b) in zip(utf8, other.utf8) {
            if a >= 0x80 || b >= 0x80 {
                isASCII = false
                break
            }
            if a != b, a | 0x20 != b | 0x20 || !(0x61...0x7A).contains(a | 0x20) { return false }
        }
        return isASCII || lowercased() == other.lowercased()
    }
}
