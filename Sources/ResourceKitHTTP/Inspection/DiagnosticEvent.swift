/// One thing the library did, for a developer to watch or record: what
/// ``NetworkSession/diagnostics(bufferingNewest:)`` streams and the session's logger receives.
///
/// Read ``kind``, then the properties that kind fills. URLs and errors are redacted by the session's
/// ``LogRedaction``, as in the logs. This module's kinds and properties describe requests; a module above it
/// adds kinds of its own with their properties, as ResourceKit does for the states of its resources, lists and
/// store (`stateChanged`, `object`, `stateSummary`…), and its events flow through the same feed and logger. A
/// later release may add kinds and properties: a `switch` over ``kind`` needs a `default`.
public struct DiagnosticEvent: Sendable, Equatable, CustomStringConvertible {
    /// Which event this is, in a set that may grow.
    public struct Kind: Sendable, Hashable, Codable, CustomStringConvertible {
        // A number, so that making and copying an event's kind costs nothing; the names are looked up.
        @usableFromInline let rawValue: UInt8
        @inlinable init(_ rawValue: UInt8) { self.rawValue = rawValue }

        // Numbers 4 to 8 are ResourceKit's kinds, which it declares and documents: their names are kept here, at
        // the numbers they have always had, so that every process decodes them, whether or not it has used one.
        private static let builtIn = [
            "requestStarted", "requestFinished", "retry", "credentialRefresh", "stateChanged", "cacheHit", "joined",
            "operationFinished", "storeNews", "redirect", "requestFailed",
        ]

        /// The kinds, numbered: the library's, then those a module or an app adds (``init(_:level:)``), in the
        /// order they are first made, each with the level a logger receives it at.
        private static let kinds = Locked(builtIn.map { (name: $0, level: LogLevel.debug) })

        /// A kind of the given name, which a logger receives at `level`: a module adds its own events to the
        /// session's pipeline as it adds codes to ``NetworkError``. Two kinds are the same kind when their
        /// names are equal, so choose a name no other module uses; the first level given for a name is its
        /// level. At most 256 kinds in a process: past that, the name is kept by the last one.
        /// - Parameters:
        ///   - name: The kind's stable name.
        ///   - level: The level a logger receives events of the kind at.
        public init(_ name: String, level: LogLevel) {
            let number = Self.kinds.withLock { kinds in
                if let index = kinds.firstIndex(where: { $0.name == name }) { return index }
                guard kinds.count <= Int(UInt8.max) else { return kinds.count - 1 }
                kinds.append((name, level))
                return kinds.count - 1
            }
            self.init(UInt8(number))
        }

        /// The kind's stable name.
        public var name: String {
            let number = Int(rawValue)
            return number < Self.builtIn.count ? Self.builtIn[number] : Self.kinds.withLock { $0[number].name }
        }

        /// Decodes a kind from its name: one of the library's, or one this process added.
        /// - Parameter decoder: The decoder to read from.
        public init(from decoder: any Decoder) throws {
            let name = try decoder.singleValueContainer().decode(String.self)
            guard let index = Self.kinds.withLock({ $0.firstIndex { $0.name == name } }) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "unknown kind \(name)"))
            }
            self.init(UInt8(index))
        }

        /// Encodes the kind as its name.
        /// - Parameter encoder: The encoder to write to.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }

        /// An attempt of a request is about to be sent: ``requestID``, ``method``, ``url``, ``attempt``.
        @inlinable public static var requestStarted: Kind { Kind(0) }
        /// An attempt of a request ended: ``requestID``, ``method``, ``url``, ``attempt``, ``duration``,
        /// and ``status`` and ``bytes`` when a response arrived (``notModified`` for a `304`), or ``error``.
        @inlinable public static var requestFinished: Kind { Kind(1) }
        /// An attempt failed and the request is sent again after ``delay``: ``requestID``, ``url``,
        /// ``attempt`` (the one that failed), ``error``.
        @inlinable public static var retry: Kind { Kind(2) }
        /// The session's ``Authenticator`` refreshed a rejected credential: ``url`` of the request that was
        /// rejected, and ``error`` if the refresh failed.
        @inlinable public static var credentialRefresh: Kind { Kind(3) }
        /// The session follows a redirect: ``requestID``, ``method``, ``url`` (redirected from), ``status``,
        /// ``location`` (redirected to).
        @inlinable public static var redirect: Kind { Kind(9) }
        /// A request failed for good, after its last attempt: ``requestID``, ``method``, ``url``, ``attempt``
        /// (the last one) and ``error``: the transport's error, a response the validation refused, a failed
        /// credential refresh, or a cancellation (in flight or while waiting to retry). Not a request's:
        /// an error building it (before anything is sent) or decoding its body (after its `requestFinished`).
        @inlinable public static var requestFailed: Kind { Kind(10) }

        /// The level a logger receives the kind at: ``LogLevel/error`` for a failed request,
        /// ``LogLevel/info`` for a retry or a credential refresh, ``LogLevel/debug`` for everything else.
        @inlinable var level: LogLevel {
            switch rawValue {
            case 10: .error
            case 2, 3: .info
            case 0..<11: .debug
            default: addedLevel
            }
        }

        /// The level of a kind a module added.
        @usableFromInline var addedLevel: LogLevel { Self.kinds.withLock { $0[Int(rawValue)].level } }

        /// The kind's name.
        public var description: String { name }
    }

    /// Which event this is.
    public let kind: Kind
    /// The request, for request events: one id per call of the session, shared by its attempts.
    public var requestID: UInt64?
    /// The request's method.
    public var method: String?
    /// The request's URL, redacted.
    public var url: String?
    /// The attempt (1 for the first).
    public var attempt: Int?
    /// The response's status code.
    public var status: Int?
    /// The response body's size in bytes.
    public var bytes: Int?
    /// How long the attempt took.
    public var duration: Duration?
    /// Whether the response was a `304 Not Modified` that answered a conditional request.
    public var notModified = false
    /// The error, redacted.
    public var error: NetworkError?
    /// The wait before a retry.
    public var delay: Duration?
    /// Where a redirect leads, redacted.
    public var location: String?
    /// What a kind a module above this one adds tells (ResourceKit's object, states and counts): read and written
    /// by that module's properties.
    package var details = DiagnosticDetails()

    /// Creates an event of a kind, its properties empty; for tests and tools that replay events.
    /// - Parameter kind: The kind.
    public init(_ kind: Kind) { self.kind = kind }

    /// A one-line summary.
    public var description: String {
        var parts = [kind.name]
        if let describe = details.describe { parts += describe(self) }
        if let method, let url { parts.append("\(method) \(url)") } else if let url { parts.append(url) }
        if let location { parts.append("to \(location)") }
        if let attempt { parts.append("attempt \(attempt)") }
        if let status { parts.append("status \(status)\(notModified ? " (not modified)" : "")") }
        if let bytes { parts.append("\(bytes) bytes") }
        if let duration { parts.append("\(duration)") }
        if let delay { parts.append("retry in \(delay)") }
        if let error { parts.append("error: \(error)") }
        return parts.joined(separator: " · ").singleLine
    }
}
