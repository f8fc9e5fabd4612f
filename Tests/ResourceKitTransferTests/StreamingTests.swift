import Foundation
import ResourceKitTesting
import ResourceKitTransfer
import TestSupport
import Testing

@testable import ResourceKitHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private func data(_ text: String) -> Data { Data(text.utf8) }

/// Reads every chunk of a body, as text.
private func chunks(of body: ResponseBody) async throws -> [String] {
    var result: [String] = []
    for try await chunk in body { result.append(String(decoding: chunk, as: UTF8.self)) }
    return result
}

private func lines(of body: ResponseBody, maximumLength: Int = 1 << 20) async throws -> [String] {
    var result: [String] = []
    for try await line in body.lines(maximumLength: maximumLength) { result.append(line) }
    return result
}

@Suite(.timeLimit(.minutes(1))) struct StreamingTests {
    let stub = StubTransport()
    var session: NetworkSession { NetworkSession(baseURL: "http://test.local/api", transport: stub) }

    @Test func aSecondIteratorReadingAtOnceFailsAndTheFirstReadsOn() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let first = Task {
            var iterator = body.makeAsyncIterator()
            return try await iterator.next()
        }
        try await waitUntil("the first iterator waits") { body.hasWaitingReader }
        var second = body.makeAsyncIterator()
        do {
            _ = try await second.next()
            Issue.record("two iterators read one body at once")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        writer.yield(data("chunk"))
        #expect(try await first.value == data("chunk"))
        writer.finish()
    }

    @Test func theLineLimitHoldsForALineThatArrivesWholeAndNotForItsCarriageReturn() async throws {
        // A line longer than the limit in one chunk, with its newline, fails as one split across chunks does.
        let (whole, writer) = ResponseBody.makeStream()
        writer.yield(data("short\nabcdefghij\nafter\n"))
        writer.finish()
        var seen: [String] = []
        do {
            for try await line in whole.lines(maximumLength: 5) { seen.append(line) }
            Issue.record("a 10-byte line passed a limit of 5")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(seen == ["short"])
        // A line of exactly the limit whose `\r` comes in one chunk and `\n` in the next passes.
        let (split, splitWriter) = ResponseBody.makeStream()
        splitWriter.yield(data("abcde\r"))
        splitWriter.yield(data("\nfg"))
        splitWriter.finish()
        var lines: [String] = []
        for try await line in split.lines(maximumLength: 5) { lines.append(line) }
        #expect(lines == ["abcde", "fg"])
    }

    @Test func theHeadComesFirstAndTheChunksInOrder() async throws {
        // A buffer of one byte: the writer waits after each chunk until it is read, so each read is one chunk
        // (a reader that falls behind a faster writer takes what waits in one piece).
        stub.stub(
            .get, "/api/feed", status: 200, headers: ["Content-Length": "9", "X-Kind": "feed"],
            chunks: [data("one"), data("two"), data("six")], bufferingLimit: 1)
        let response = try await session.bytes(Endpoint(.get, "feed"))
        #expect(response.statusCode == 200)
        #expect(response.headers["x-kind"] == "feed")
        #expect(response.expectedLength == 9)
        #expect(response.url?.absoluteString == "http://test.local/api/feed")
        #expect(try await chunks(of: response.body) == ["one", "two", "six"])
    }

    @Test func aStubThatAnswersWholeGivesItsBodyAsOneChunk() async throws {
        stub.stub(.get, "/api/whole", body: data("all of it"))
        let response = try await session.bytes(Endpoint(.get, "whole"))
        #expect(try await chunks(of: response.body) == ["all of it"])
        // And an empty body has no chunk.
        stub.stub(.get, "/api/empty", status: 204)
        #expect(try await chunks(of: try await session.bytes(Endpoint(.get, "empty")).body) == [])
    }

    @Test func linesSplitAcrossChunksAtEveryKindOfBreak() async throws {
        stub.stub(
            .get, "/api/lines",
            chunks: [data("al"), data("pha\r\nbe"), data("ta\n\n"), data("gam\u{FF}ma\r"), data("\nlast")],
            bufferingLimit: 1)
        let response = try await session.bytes(Endpoint(.get, "lines"))
        #expect(try await lines(of: response.body) == ["alpha", "beta", "", "gamÿma", "last"])
    }

    @Test func invalidUTF8BecomesReplacementCharacters() async throws {
        stub.stub(.get, "/api/bytes", chunks: [Data([0x61, 0xFF, 0x62, 0x0A])])
        let response = try await session.bytes(Endpoint(.get, "bytes"))
        #expect(try await lines(of: response.body) == ["a\u{FFFD}b"])
    }

    @Test func aLineLongerThanTheLimitEndsTheLinesAndStopsTheTransfer() async throws {
        // A buffer of one byte: the writer waits for the reader after each chunk, so the transfer is still on
        // when the reader gives up.
        stub.stub(
            .get, "/api/long", chunks: [data("short\n"), data("0123456789"), data("never read\n")], bufferingLimit: 1)
        let response = try await session.bytes(Endpoint(.get, "long"))
        var seen: [String] = []
        do {
            for try await line in response.body.lines(maximumLength: 8) { seen.append(line) }
            Issue.record("a line of 20 bytes passed a limit of 8")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(seen == ["short"])
        #expect(stub.cancellationCount == 1)
    }

    @Test func collectReadsTheWholeBodyOrRefusesOneTooLong() async throws {
        stub.stub(.get, "/api/body", chunks: [data("12345"), data("67890"), data("")], bufferingLimit: 1)
        // A body that goes on past the limit: its writer still waits for room when the reader refuses it, so the
        // refusal stops a transfer in progress (a body that had ended by then would have nothing to stop).
        stub.stub(.get, "/api/long", chunks: [data("12345"), data("67890"), data("abcde")], bufferingLimit: 1)
        #expect(try await session.bytes(Endpoint(.get, "body")).body.collect(upTo: 10) == data("1234567890"))
        do {
            _ = try await session.bytes(Endpoint(.get, "long")).body.collect(upTo: 9)
            Issue.record("10 bytes passed a limit of 9")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(stub.cancellationCount == 1)
    }

    @Test func aWriterWaitsForTheReaderOnceTheBufferIsFull() async throws {
        let written = Locked(0)
        stub.stubStreaming(.get, "/api/slow") { request in
            let (body, writer) = ResponseBody.makeStream(bufferingLimit: 4)
            Task {
                for index in 0..<6 {
                    written.withLock { $0 += 1 }
                    do { try await writer.write(Data("chunk\(index)".utf8)) } catch { return }
                }
                writer.finish()
            }
            return StreamedResponse(statusCode: 200, url: request.url, body: body)
        }
        let response = try await session.bytes(Endpoint(.get, "slow"))
        var read = 0
        for try await chunk in response.body {
            // Each chunk fills the buffer: the writer is at most one chunk ahead of the reader.
            #expect(written.withLock { $0 } <= read + 2)
            #expect(chunk == Data("chunk\(read)".utf8))
            read += 1
        }
        #expect(read == 6)
    }

    @Test func chunksComeAtTheirTimesOnAManualClockAndTheTimeLimitEndsAtTheHead() async throws {
        let clock = ManualClock()
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: stub, timeLimit: .seconds(1), clock: clock)
        stub.stub(
            .get, "/api/drip", chunks: [data("a"), data("b"), data("c")], every: .seconds(10), on: clock,
            bufferingLimit: 1)
        let response = try await session.bytes(Endpoint(.get, "drip"))
        var iterator = response.body.makeAsyncIterator()
        #expect(try await iterator.next() == data("a"))
        for expected in ["b", "c"] {
            // The writer sleeps 10 s for the next chunk: ten times the session's time limit.
            try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(10)) }
            clock.advance(by: .seconds(10))
            #expect(try await iterator.next() == data(expected))
        }
        #expect(try await iterator.next() == nil)
    }

    @Test func aHeadThatDoesNotComeInTimeFailsWithTimeout() async throws {
        let latch = AsyncLatch()
        stub.stub(.get, "/api/never", heldBy: latch)
        do {
            _ = try await session.bytes(Endpoint(.get, "never", timeLimit: .milliseconds(50)))
            Issue.record("a held head came back")
        } catch {
            #expect(error == .timeout)
        }
        latch.open()
    }

    @Test func cancellingTheReaderStopsTheTransfer() async throws {
        let clock = ManualClock()
        stub.stub(.get, "/api/endless", chunks: [data("first"), data("second")], every: .seconds(60), on: clock)
        let response = try await session.bytes(Endpoint(.get, "endless"))
        let gotFirst = AsyncLatch()
        let reader = Task {
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
            gotFirst.open()
            return try await iterator.next()
        }
        try await gotFirst.wait()
        try await clock.waitForSleepers(timeout: .seconds(5)) { $0.contains(.seconds(60)) }
        reader.cancel()
        do {
            _ = try await reader.value
            Issue.record("a cancelled reader got a chunk")
        } catch let error as NetworkError {
            #expect(error == .cancelled)
        }
        #expect(stub.cancellationCount == 1)
    }

    @Test func aBodyDroppedUnreadStopsTheTransfer() async throws {
        stub.stub(.get, "/api/unread", chunks: [data("a"), data("b")], bufferingLimit: 1)
        do {
            let response = try await session.bytes(Endpoint(.get, "unread"))
            #expect(response.statusCode == 200)
        }
        #expect(stub.cancellationCount == 1)
    }

    @Test func aRejectedStatusFailsWithItsBodyAsSendDoes() async throws {
        stub.stub(
            .get, "/api/missing", status: 404, headers: ["Content-Type": "text/plain"],
            chunks: [data("no "), data("such")])
        do {
            _ = try await session.bytes(Endpoint(.get, "missing"))
            Issue.record("a 404 passed validation")
        } catch {
            #expect(error.statusCode == 404)
            #expect(error.body == data("no such"))
        }
    }

    /// A `500` at `/api/huge` whose body is 35 bytes longer than a megabyte, in chunks that straddle it; it
    /// returns the megabyte.
    func stubHugeBody() -> Int {
        let megabyte = 1 << 20
        stub.stub(
            .get, "/api/huge", status: 500,
            chunks: [
                Data(repeating: 1, count: megabyte - 10), Data(repeating: 2, count: 20), Data(repeating: 3, count: 5),
            ],
            bufferingLimit: 1)
        return megabyte
    }

    @Test func aRejectedStatusWithAHugeBodyKeepsItsFirstMegabyte() async throws {
        let megabyte = stubHugeBody()
        do {
            _ = try await session.bytes(Endpoint(.get, "huge"))
            Issue.record("a 500 passed validation")
        } catch {
            #expect(error.statusCode == 500)
            #expect(error.body?.count == megabyte)
            #expect(error.body?.suffix(10) == Data(repeating: 2, count: 10))
        }
        #expect(stub.cancellationCount == 1)
    }

    /// A status that is not a success but that validation accepts arrives with its body read, as a rejected one's
    /// is: its first megabyte, in memory, and the transfer stopped there.
    @Test func anAcceptedStatusThatIsNotASuccessArrivesWithItsFirstMegabyte() async throws {
        let megabyte = stubHugeBody()
        let session = NetworkSession(
            baseURL: "http://test.local/api", validation: StatusCodeValidation(acceptable: 200..<600), transport: stub)
        let response = try await session.bytes(Endpoint(.get, "huge"))
        #expect(response.statusCode == 500)
        #expect(stub.cancellationCount == 1)
        let body = try await response.body.collect(upTo: .max)
        #expect(body.count == megabyte)
        #expect(body.suffix(10) == Data(repeating: 2, count: 10))
    }

    @Test func redirectsAndRetriesApplyUntilTheHead() async throws {
        stub.stub(.get, "/api/old", status: 302, headers: ["Location": "/api/flaky"], chunks: [data("moved")])
        let attempts = Locked(0)
        stub.stubStreaming(.get, "/api/flaky") { request in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            let status = attempt == 1 ? 503 : 200
            return StreamedResponse(
                statusCode: status, url: request.url, body: ResponseBody(Data("try \(attempt)".utf8)))
        }
        let session = NetworkSession(
            baseURL: "http://test.local/api", transport: stub,
            retry: RetryPolicy(maximumAttempts: 2, initialDelay: .zero, jitter: .none))
        let response = try await session.bytes(Endpoint(.get, "old"))
        #expect(response.statusCode == 200)
        #expect(response.url?.path == "/api/flaky")
        #expect(try await chunks(of: response.body) == ["try 2"])
        // A retry starts again from the endpoint's URL, as for `send`.
        #expect(stub.requests.map { $0.url?.path ?? "" } == ["/api/old", "/api/flaky", "/api/old", "/api/flaky"])
    }

    @Test func aTransferThatFailsMidwayEndsTheBodyWithItsError() async throws {
        stub.stubStreaming(.get, "/api/broken") { request in
            let (body, writer) = ResponseBody.makeStream()
            writer.yield(Data("partial".utf8))
            writer.finish(throwing: .transport(code: .networkConnectionLost, message: "gone"))
            return StreamedResponse(statusCode: 200, url: request.url, body: body)
        }
        let response = try await session.bytes(Endpoint(.get, "broken"))
        var iterator = response.body.makeAsyncIterator()
        #expect(try await iterator.next() == data("partial"))
        do {
            _ = try await iterator.next()
            Issue.record("a broken body ended cleanly")
        } catch {
            #expect(error.transportCode == .networkConnectionLost)
        }
    }

    @Test func aWriterLearnsTheReaderIsGone() async throws {
        let (body, writer) = ResponseBody.makeStream(bufferingLimit: 0)
        let stopped = AsyncLatch()
        writer.onTermination { stopped.open() }
        body.cancel()
        try await stopped.wait()
        #expect(writer.yield(data("late")) == false)
        do {
            try await writer.write(data("late"))
            Issue.record("a write after the reader left succeeded")
        } catch {
            #expect(error == .cancelled)
        }
        // A handler set after the end runs at once.
        let late = AsyncLatch()
        writer.onTermination { late.open() }
        try await late.wait()
    }
}
