import Foundation
public import ResourceKitHTTP

extension ResponseBody {
    /// The body as lines of text: split at `\n`, a `\r` before it dropped, decoded as UTF-8 (invalid bytes
    /// become U+FFFD). A last line without a newline is a line too (a `\r` that ends it is dropped as well).
    /// - Parameter maximumLength: The longest line, in bytes, to accept; a value below 1 counts as 1.
    /// - Returns: The lines; a line longer than `maximumLength` ends them with
    ///   `NetworkError.invalidResponse(_:)` and stops the transfer.
    public func lines(maximumLength: Int = 1 << 20) -> ResponseLines {
        ResponseLines(body: self, maximumLength: Swift.max(1, maximumLength))
    }
}

/// Lines of a `ResponseBody`: see ``ResourceKitHTTP/ResponseBody/lines(maximumLength:)``.
public struct ResponseLines: AsyncSequence, Sendable {
    /// A line, without its line break.
    public typealias Element = String
    /// What ends the lines early.
    public typealias Failure = NetworkError

    let body: ResponseBody
    let maximumLength: Int

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: body.makeAsyncIterator(), body: body, maximumLength: maximumLength)
    }

    /// Reads the lines in order.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseBody.Iterator
        let body: ResponseBody
        let maximumLength: Int
        var pending: [UInt8] = []
        var start = 0
        var isAtEnd = false

        /// The next line; `nil` after the last.
        /// - Throws: The body's error, or `NetworkError.invalidResponse(_:)` for a line that is too long.
        public mutating func next() async throws(NetworkError) -> String? {
            try await next(isolation: nil)
        }

        /// The next line, for an isolated caller.
        /// - Parameter actor: The caller's isolation.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> String? {
            while true {
                if let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    var end = newline
                    if end > start, pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    // However the line arrived, whole in one chunk or in many.
                    guard end - start <= maximumLength else { throw tooLong() }
                    let line = String(decoding: pending[start..<end], as: UTF8.self)
                    start = newline + 1
                    return line
                }
                if isAtEnd {
                    guard start < pending.count else { return nil }
                    var end = pending.count
                    if pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    guard end - start <= maximumLength else { throw tooLong() }
                    let line = String(decoding: pending[start..<end], as: UTF8.self)
                    start = pending.count
                    return line
                }
                // Waiting for the rest of a line: a `\r` it may end with is not part of it.
                let waiting = pending.count - start - (pending.last == UInt8(ascii: "\r") ? 1 : 0)
                guard waiting <= maximumLength else { throw tooLong() }
                if start > 0 {
                    pending.removeFirst(start)
                    start = 0
                }
                if let chunk = try await chunks.next(isolation: actor) {
                    pending.append(contentsOf: chunk)
                } else {
                    isAtEnd = true
                }
            }
        }

        /// Stops the transfer: a line is longer than the limit.
        private func tooLong() -> NetworkError {
            body.cancel()
            return .invalidResponse("a line of the response is longer than \(maximumLength) bytes")
        }
    }
}
