// A network error's code: the stable part of an error, what callers switch on.

extension NetworkError {
    /// What went wrong, in a set that may grow: a `switch` over it needs a `default`.
    ///
    /// Modules and apps add codes of their own as static members, and throw them with
    /// ``NetworkError/init(_:detail:)``: a catch clause switches over them as over the library's.
    public struct Code: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code's stable name, as in `"httpStatus"`: what a snapshot or a log records.
        public let name: String

        /// A code of the given name. Two codes are the same code when their names are equal, so choose a
        /// name no other module uses (a prefix of your own, say).
        /// - Parameter name: The code's stable name.
        public init(_ name: String) { self.name = name }

        /// A URL could not be built: a bad base URL, a path that does not form a URL, or a malformed
        /// `Link`.
        public static let invalidURL = Code("invalidURL")
        /// The request could not be built from what the caller gave.
        public static let invalidRequest = Code("invalidRequest")
        /// The transport failed before a complete response arrived; ``NetworkError/transportCode`` says how.
        public static let transport = Code("transport")
        /// The request did not complete within its time limit.
        public static let timeout = Code("timeout")
        /// The calling task was cancelled.
        public static let cancelled = Code("cancelled")
        /// The server answered with a status the validation provider does not accept.
        public static let httpStatus = Code("httpStatus")
        /// A validation provider decoded the server's own error (``NetworkError/serverError``).
        public static let server = Code("server")
        /// The response body could not be decoded into the expected type.
        public static let decoding = Code("decoding")
        /// The request body could not be encoded.
        public static let encoding = Code("encoding")
        /// The server's answer was well formed but cannot be used.
        public static let invalidResponse = Code("invalidResponse")
        /// The session's ``Authenticator`` failed to refresh a rejected credential
        /// (``NetworkError/underlyingError`` is the refresh's error).
        public static let authenticationFailed = Code("authenticationFailed")
        /// A file of a transfer could not be read or written: ``NetworkError/file(_:)``.
        public static let file = Code("file")
        /// The library's codes, in the order of ``NetworkError/codeNumber``; added codes are numbered after
        /// them as they are first seen.
        static let numbered = Locked<[Code]>([
            .invalidURL, .invalidRequest, .transport, .timeout, .cancelled, .httpStatus, .server, .decoding,
            .encoding, .invalidResponse, .authenticationFailed, .file,
        ])
        static let builtInCount = 12

        /// The code of a number ``NetworkError/codeNumber`` gave.
        package static func numbered(_ number: UInt8) -> Code? {
            numbered.withLock { Int(number) < $0.count ? $0[Int(number)] : nil }
        }

        /// The number of an added code: the same for every error of that code in this process. Past 255
        /// codes (243 added), the last number stands for every further code.
        static func number(of code: Code) -> UInt8 {
            numbered.withLock { codes in
                if let index = codes[builtInCount...].firstIndex(of: code) { return UInt8(index) }
                guard codes.count < Int(UInt8.max) else { return UInt8.max - 1 }
                codes.append(code)
                return UInt8(codes.count - 1)
            }
        }

        /// The code's name.
        public var description: String { name }

        /// Decodes a code from its name.
        /// - Parameter decoder: The decoder to read from.
        public init(from decoder: any Decoder) throws {
            self.init(try decoder.singleValueContainer().decode(String.self))
        }

        /// Encodes the code as its name.
        /// - Parameter encoder: The encoder to write to.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }
    }

    /// What went wrong.
    public var code: Code {
        if case .added(let code, _) = kind { return code }
        return Code.numbered(codeNumber) ?? Code("unknown")
    }

    /// The code as a number, its place in `Code.numbered`: what a diagnostic record keeps, as it holds no
    /// reference.
    @usableFromInline package var codeNumber: UInt8 {
        switch kind {
        case .invalidURL: 0
        case .invalidRequest: 1
        case .transport: 2
        case .timeout: 3
        case .cancelled: 4
        case .httpStatus: 5
        case .server: 6
        case .decoding: 7
        case .encoding: 8
        case .invalidResponse: 9
        case .authenticationFailed: 10
        case .file: 11
        case .added(let code, _): Code.number(of: code)
        }
    }
}
