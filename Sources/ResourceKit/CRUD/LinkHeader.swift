public import Foundation

/// Parses RFC 8288 `Link` header values.
public enum LinkHeader {
    /// One link: its target and parameters.
    public struct Link: Sendable, Equatable {
        /// The target, as written between `<` and `>`.
        public var target: String
        /// Parameters by lower-cased name, unquoted.
        public var parameters: [String: String]
        /// The space-separated relation types of `rel`, lower-cased.
        public var relations: [String] {
            (parameters["rel"] ?? "").lowercased().split(separator: " ").map(String.init)
        }
    }

    /// Parses a header value into links. Malformed parts are skipped, never fatal.
    /// - Parameter value: The header value, such as `<https://a/b?page=2>; rel="next", <…>; rel="last"`.
    /// - Returns: The links that could be read.
    public static func parse(_ value: String) -> [Link] {
        var links: [Link] = []
        var scanner = Substring(value)
        while let open = scanner.firstIndex(of: "<") {
            scanner = scanner[scanner.index(after: open)...]
            guard let close = scanner.firstIndex(of: ">") else { break }
            let target = String(scanner[..<close]).trimmingCharacters(in: .whitespaces)
            scanner = scanner[scanner.index(after: close)...]
            var parameters: [String: String] = [:]
            // Parameters run until the comma that ends this link; commas inside quotes do not count.
            while true {
                scanner = scanner.drop { $0 == " " || $0 == "\t" }
                guard scanner.first == ";" else { break }
                scanner = scanner.dropFirst().drop { $0 == " " || $0 == "\t" }
                let name = scanner.prefix { $0 != "=" && $0 != ";" && $0 != "," }
                scanner = scanner.dropFirst(name.count)
                var parameterValue = ""
                if scanner.first == "=" {
                    scanner = scanner.dropFirst().drop { $0 == " " }
                    if scanner.first == "\"" {
                        // An RFC 9110 quoted-string: a backslash escapes the next character, `\"` included.
                        scanner = scanner.dropFirst()
                        var isEscaped = false
                        while let character = scanner.first {
                            scanner = scanner.dropFirst()
                            if isEscaped {
                                parameterValue.append(character)
                                isEscaped = false
                            } else if character == "\\" {
                                isEscaped = true
                            } else if character == "\"" {
                                break
                            } else {
                                parameterValue.append(character)
                            }
                        }
                    } else {
                        let token = scanner.prefix { $0 != ";" && $0 != "," }
                        parameterValue = token.trimmingCharacters(in: .whitespaces)
                        scanner = scanner.dropFirst(token.count)
                    }
                }
                let key = name.trimmingCharacters(in: .whitespaces).lowercased()
                if !key.isEmpty, parameters[key] == nil { parameters[key] = parameterValue }
            }
            if !target.isEmpty { links.append(Link(target: target, parameters: parameters)) }
            guard let comma = scanner.firstIndex(of: ",") else { break }
            scanner = scanner[scanner.index(after: comma)...]
        }
        return links
    }

    /// The URL of the first link with the relation, resolved against `base`.
    /// - Parameters:
    ///   - relation: The relation type, such as `next`.
    ///   - value: The header value.
    ///   - base: The URL relative targets resolve against.
    /// - Returns: The absolute URL, or `nil` when there is no such link or it is not a URL.
    public static func url(forRelation relation: String, in value: String, relativeTo base: URL?) -> URL? {
        let wanted = relation.lowercased()
        guard let link = parse(value).first(where: { $0.relations.contains(wanted) }) else { return nil }
        guard let url = URL(string: link.target, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil
        else { return nil }
        return url
    }
}
