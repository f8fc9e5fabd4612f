import Foundation

/// When and how ``NetworkSession`` sends a request again after it failed.
///
/// A request is retried when all of these hold:
/// - it failed with a status in ``retryableStatusCodes`` (by default 408, 429, 500, 502, 503, 504) or a
///   transient transport error (the transport timed out, the connection was lost, the host could not be
///   reached, the device is offline). A connection the server closed before any byte of a response is a lost
///   connection on every platform: ``URLSessionTransport`` reports it as `networkConnectionLost` on Linux too,
///   where `URLSession` says `badServerResponse`;
/// - its method is in ``retryableMethods`` (by default the idempotent ones: `GET`, `HEAD`, `OPTIONS`, `PUT`,
///   `DELETE`) or it carries an `Idempotency-Key` header, which opts any method in;
/// - fewer than ``maximumAttempts`` attempts were made;
/// - the caller has not cancelled, and the wait ends before the request's deadline.
///
/// The wait before retry *n* is `initialDelay × multiplier^(n-1)`, capped at ``maximumDelay``, and with
/// ``Jitter/full`` a uniformly random duration between zero and that. Out-of-range inputs are clamped,
/// never a crash: a multiplier below 1 or NaN counts as 1, a negative wait as zero, a jitter draw outside
/// `0..<1` as the nearest end (NaN as 1, the whole wait), and no computed wait exceeds 10⁹ seconds. A
/// `Retry-After` header (seconds or an HTTP date) replaces the computed wait; when it asks for longer than
/// ``maximumRetryAfter``, the request is not retried and the error, whose ``NetworkError/headers`` hold
/// `Retry-After`, is thrown at once.
///
/// ```swift
/// let session = NetworkSession(baseURL: "https://api.example.com", retry: .standard)
/// var upload = Endpoint(.post, "uploads", headers: ["Idempotency-Key": key], body: .json(file))
/// upload.retry = RetryPolicy(maximumAttempts: 5)   // this endpoint only
/// ```
///
/// Two policies are equal when every setting is, their jitter included (see ``Jitter``).
public struct RetryPolicy: Sendable, Equatable {
    /// How attempts are spread out.
    ///
    /// Jitters compare by their source of random numbers, as closures cannot be compared: ``none`` equals
    /// ``none``, ``full`` equals ``full``, and a ``full(using:)`` jitter equals its own copies only, not
    /// another made from the same closure.
    public struct Jitter: Sendable, Equatable {
        /// Holds a source of random numbers, whose identity makes the jitter comparable.
        final class Source: Sendable {
            let draw: @Sendable () -> Double
            init(_ draw: @escaping @Sendable () -> Double) { self.draw = draw }
        }

        let source: Source?

        /// Waits exactly the computed backoff.
        public static let none = Jitter(source: nil)
        /// Waits a uniformly random duration between zero and the computed backoff ("full jitter"), so that
        /// clients that failed together do not retry together.
        public static let full = Jitter(source: Source { Double.random(in: 0..<1) })

        /// Full jitter drawing from `random`, which returns a number in `0..<1`; for reproducible tests. A draw
        /// out of that range is clamped to it, and NaN counts as 1 (the whole computed wait).
        /// - Parameter random: The source of random numbers.
        /// - Returns: The jitter.
        public static func full(using random: @escaping @Sendable () -> Double) -> Jitter {
            Jitter(source: Source(random))
        }

        /// Whether both jitters are the same: both none, or the same source of random numbers.
        public static func == (lhs: Jitter, rhs: Jitter) -> Bool { lhs.source === rhs.source }
    }

    /// Attempts in all, the first one included: `1` never retries.
    public var maximumAttempts: Int
    /// The wait before the first retry, before jitter.
    public var initialDelay: Duration
    /// The factor the wait grows by with each retry.
    public var multiplier: Double
    /// The longest computed wait, before jitter.
    public var maximumDelay: Duration
    /// How the wait is randomised.
    public var jitter: Jitter
    /// The longest `Retry-After` honoured; a longer one ends the request with its error. A `Retry-After` above
    /// 10⁹ seconds (about 31 years) counts as 10⁹ seconds.
    public var maximumRetryAfter: Duration
    /// Statuses worth another attempt.
    public var retryableStatusCodes: Set<Int>
    /// Methods retried without an `Idempotency-Key` header.
    public var retryableMethods: Set<HTTPMethod>

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumAttempts: Attempts in all, the first one included.
    ///   - initialDelay: The wait before the first retry, before jitter.
    ///   - multiplier: The factor the wait grows by with each retry.
    ///   - maximumDelay: The longest computed wait, before jitter.
    ///   - jitter: How the wait is randomised.
    ///   - maximumRetryAfter: The longest `Retry-After` honoured.
    ///   - retryableStatusCodes: Statuses worth another attempt.
    ///   - retryableMethods: Methods retried without an `Idempotency-Key` header.
    public init(
        maximumAttempts: Int = 3,
        initialDelay: Duration = .milliseconds(500),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30),
        jitter: Jitter = .full,
        maximumRetryAfter: Duration = .seconds(60),
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retryableMethods: Set<HTTPMethod> = [.get, .head, .options, .put, .delete]
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.maximumRetryAfter = maximumRetryAfter
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableMethods = retryableMethods
    }

    /// Never retries: the session's default.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// Three attempts, waits from 0.5 s doubling up to 30 s with full jitter, `Retry-After` up to 60 s.
    public static let standard = RetryPolicy()

    /// Whether a request with this method and headers may be sent again.
    func allows(method: String, headers: [String: String]) -> Bool {
        if retryableMethods.contains(HTTPMethod(rawValue: method)) { return true }
        return headers.keys.contains { $0.caseInsensitiveEquals("Idempotency-Key") }
    }

    /// Whether the failure is worth another attempt. The session's own deadline is never retried.
    func isRetryable(_ error: NetworkError, response: HTTPResponse?) -> Bool {
        if let response { return retryableStatusCodes.contains(response.statusCode) }
        switch error.kind {
        case .timeout: return true
        case .transport(let code, _):
            return [.networkConnectionLost, .cannotConnectToHost, .timedOut, .notConnectedToInternet].contains(code)
        default: return false
        }
    }

    /// The computed wait before retry `retry` (1 for the first), jitter included. No policy traps here: a
    /// multiplier below 1 or NaN counts as 1, a wait that is not positive as zero, one longer than
    /// ``Duration/longest`` as that, and a draw as ``Jitter/unit(_:)`` clamps it.
    func backoff(beforeRetry retry: Int) -> Duration {
        guard
            let seconds = Backoff.seconds(
                initial: initialDelay, multiplier: multiplier, exponent: retry - 1, ceiling: maximumDelay)
        else { return .zero }
        return jitter.shortening(seconds: seconds)
    }
}

/// Reads `Retry-After` (RFC 9110 §10.2.3): a number of seconds or an HTTP date.
enum RetryAfter {
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",  // IMF-fixdate
        "EEEE, dd-MMM-yy HH:mm:ss zzz",  // RFC 850
        "EEE MMM d HH:mm:ss yyyy",  // asctime
    ]

    /// The wait the header asks for, never negative; `nil` when there is no header or it cannot be read.
    static func delay(in headers: HTTPHeaders, now: Date = Date()) -> Duration? {
        guard let text = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return nil
        }
        if text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            // In 64 bits on every platform: an `Int` of 32 bits (watchOS devices) would refuse a wait past 68 years
            // and clamp every longer one to 2 s.
            // Never longer than the longest wait the library computes (10⁹ s): a clock traps adding a deadline far
            // beyond it.
            guard let seconds = Int64(text) else { return .longest }
            return min(.seconds(seconds), .longest)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in formats {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                return min(.seconds(min(max(date.timeIntervalSince(now), 0), Duration.longestSeconds)), .longest)
            }
        }
        return nil
    }
}
