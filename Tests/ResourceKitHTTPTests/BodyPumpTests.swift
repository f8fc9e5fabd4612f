import Foundation
import Testing

@testable import ResourceKitHTTP

/// What feeds an upload's bound stream pair on Apple platforms, run here on the streams Foundation has
/// everywhere: every byte of the body, in order; a body that fails stops the task and is not sent short; a reader
/// that goes stops the copy.
@Suite struct BodyPumpTests {
    /// A body of `count` bytes that fails after `failAfter` of them.
    // platforms: a test double read synchronously by the pump, never scheduled on a run loop.
    final class FailingStream: InputStream {
        let count: Int
        let failAfter: Int
        private(set) var sent = 0
        private var status: Stream.Status = .notOpen

        init(count: Int, failAfter: Int) {
            self.count = count
            self.failAfter = failAfter
            super.init(data: Data())
        }

        override func open() { status = .open }
        override func close() { status = .closed }
        override var streamStatus: Stream.Status { status }
        override var hasBytesAvailable: Bool { sent < count }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
            if sent >= failAfter { return -1 }
            let take = min(maxLength, failAfter - sent, count - sent)
            buffer.update(repeating: 1, count: take)
            sent += take
            return take
        }
    }

    @Test func everyByteOfTheBodyReachesTheReaderInOrderAndTheOutputEnds() throws {
        let body = Data((0..<(3 * BodyPump.bufferSize + 123)).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let output = OutputStream(toMemory: ())
        var failed = false
        BodyPump.run(InputStream(data: body), into: output) { failed = true }
        let written = try #require(output.property(forKey: .dataWrittenToMemoryStreamKey) as? Data)
        #expect(written == body)
        #expect(output.streamStatus == .closed)
        #expect(!failed)
    }

    @Test func aBodyThatFailsStopsTheTaskAndIsNotCopiedFurther() throws {
        let failing = FailingStream(count: 10 * BodyPump.bufferSize, failAfter: BodyPump.bufferSize + 10)
        let output = OutputStream(toMemory: ())
        var failed = 0
        BodyPump.run(failing, into: output) { failed += 1 }
        #expect(failed == 1)
        let written = try #require(output.property(forKey: .dataWrittenToMemoryStreamKey) as? Data)
        #expect(written.count == BodyPump.bufferSize + 10)
        #expect(failing.streamStatus == .closed)
    }

    @Test func aReaderThatGoesStopsTheCopyWithoutFailingTheBody() {
        let body = FailingStream(count: 5 * BodyPump.bufferSize, failAfter: .max)
        // A reader with room for less than a buffer: the first write fails, as one to a reader that went does.
        let capacity = BodyPump.bufferSize / 2
        let memory = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { memory.deallocate() }
        var failed = false
        BodyPump.run(body, into: OutputStream(toBuffer: memory, capacity: capacity)) { failed = true }
        // One buffer read, none after the refusal; the body closed, and not failed.
        #expect(body.sent == BodyPump.bufferSize)
        #expect(body.streamStatus == .closed)
        #expect(!failed)
    }
}
