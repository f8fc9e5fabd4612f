import Foundation
import ResourceKitEventStream
import ResourceKitHTTP
import TestSupport
import Testing

/// Parses the whole stream in one chunk, then ends it.
private func parse(_ text: String) throws -> [ServerSentEvent] {
    var parser = EventStreamParser()
    let events = try parser.parse(Data(text.utf8))
    parser.finish()
    return events
}

private func message(_ data: String, id: String = "") -> ServerSentEvent {
    ServerSentEvent(type: "message", data: data, lastEventID: id)
}

@Suite(.offThePool) struct EventStreamParserTests {
    // MARK: The examples of the standard's event-stream section

    @Test func dataLinesJoinWithNewlines() throws {
        #expect(try parse("data: YHOO\ndata: +2\ndata: 10\n\n") == [message("YHOO\n+2\n10")])
    }

    @Test func commentsIdsAndOneLeadingSpace() throws {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n"
        // The comment's block dispatches nothing; `id` with no value resets the id; only one space is removed;
        // the last event has no empty line after it and is dropped at the end.
        #expect(try parse(stream) == [message("first event", id: "1"), message("second event")])
        #expect(try parse(stream + "\n").last == message(" third event"))
    }

    @Test func emptyDataFieldsMakeEmptyAndNewlineEvents() throws {
        #expect(try parse("data\n\ndata\ndata\n\ndata:") == [message(""), message("\n")])
    }

    @Test func aSpaceAfterTheColonIsOptional() throws {
        #expect(try parse("data:test\n\ndata: test\n\n") == [message("test"), message("test")])
    }

    @Test func eventTypesNameEvents() throws {
        let stream = "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
        #expect(
            try parse(stream) == [
                ServerSentEvent(type: "add", data: "73857293"), ServerSentEvent(type: "remove", data: "2153"),
                ServerSentEvent(type: "add", data: "113411"),
            ])
    }

    // MARK: Fields and lines

    @Test func everyKindOfLineEnd() throws {
        #expect(
            try parse("data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\n\n") == ["a", "b", "c", "d"].map { message($0) })
    }

    @Test func aLeadingByteOrderMarkIsSkippedOnce() throws {
        #expect(try parse("\u{FEFF}data: x\n\n") == [message("x")])
        // A second one is part of the field name, which is then unknown.
        #expect(try parse("\u{FEFF}\u{FEFF}data: x\n\n") == [])
        // Only at the start of the stream.
        #expect(try parse("data: x\n\n\u{FEFF}data: y\n\n") == [message("x")])
    }

    @Test func anEmptyEventTypeIsAMessageAndTheTypeDoesNotCarryOver() throws {
        #expect(try parse("event:\ndata: a\n\ndata: b\n\n") == [message("a"), message("b")])
        #expect(try parse("event: ping\n\ndata: c\n\n") == [message("c")])
    }

    @Test func idsCarryOverUntilResetAndIgnoreNulls() throws {
        #expect(
            try parse("id: 7\ndata: a\n\ndata: b\n\nid: 8\u{0}\ndata: c\n\nid:\ndata: d\n\n") == [
                message("a", id: "7"), message("b", id: "7"), message("c", id: "7"), message("d"),
            ])
        // An id set in a block without data still becomes the stream's last id.
        var parser = EventStreamParser()
        #expect(try parser.parse(Data("id: 42\n\n".utf8)) == [])
        #expect(parser.lastEventID == "42")
        // An id not yet ended by an empty line is not the stream's yet.
        _ = try parser.parse(Data("id: 43\n".utf8))
        #expect(parser.lastEventID == "42")
    }

    @Test func retryTakesDigitsOnly() throws {
        var parser = EventStreamParser()
        _ = try parser.parse(Data("retry: 1500\n".utf8))
        #expect(parser.retry == .milliseconds(1_500))
        for bad in ["retry: 15s\n", "retry: -1\n", "retry: 1.5\n", "retry:\n", "retry:  15\n", "retry: ١٢\n"] {
            _ = try parser.parse(Data(bad.utf8))
            #expect(parser.retry == .milliseconds(1_500), "\(bad)")
        }
        _ = try parser.parse(Data("retry: 0\n".utf8))
        #expect(parser.retry == .zero)
        _ = try parser.parse(Data("retry: 99999999999999999999999999\n".utf8))
        #expect(parser.retry == .milliseconds(Int64.max))
    }

    @Test func unknownFieldsAndGarbageLinesAreIgnored() throws {
        let stream = "foo: bar\ndata: a\n\u{FF}\u{01}junk\nDATA: no\n data: no\nevent data: no\ndata: b\n\n"
        #expect(try parse(stream) == [message("a\nb")])
    }

    @Test func invalidUTF8BecomesTheReplacementCharacter() throws {
        var parser = EventStreamParser()
        let events = try parser.parse(Data([0x64, 0x61, 0x74, 0x61, 0x3A, 0x20, 0x61, 0xFF, 0x62, 0x0A, 0x0A]))
        #expect(events == [message("a\u{FFFD}b")])
    }

    @Test func finishDropsAnUnendedEventAndKeepsTheIDForTheNextConnection() throws {
        var parser = EventStreamParser(lastEventID: "3")
        #expect(parser.lastEventID == "3")
        #expect(
            try parser.parse(Data("data: z\n\nid: 4\ndata: a\n\nid: 5\ndata: cut".utf8)) == [
                message("z", id: "3"), message("a", id: "4"),
            ])
        parser.finish()
        // The next connection's events carry the last id dispatched, as browsers do; the cut block's id is gone.
        #expect(try parser.parse(Data("\n\ndata: b\n\n".utf8)) == [message("b", id: "4")])
        #expect(parser.lastEventID == "4")
    }

    @Test func aTenMegabyteEventInSmallChunks() throws {
        let payload = String(repeating: "0123456789abcdé", count: 10 << 20 / 16)
        let bytes = Array("event: big\ndata: \(payload)\n\n".utf8)
        var parser = EventStreamParser()
        var events: [ServerSentEvent] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 65_521)
            events += try parser.parse(bytes[start..<end])
            start = end
        }
        #expect(events.count == 1)
        #expect(events.first?.type == "big")
        #expect(events.first?.data == payload)
    }

    @Test func anEventOrALineLargerThanTheBoundFails() throws {
        var parser = EventStreamParser(maximumEventSize: 1_000)
        #expect(try parser.parse(Data("data: \(String(repeating: "x", count: 900))\n\n".utf8)).count == 1)
        #expect(throws: NetworkError.self) {
            _ = try parser.parse(Data("data: \(String(repeating: "x", count: 600))\n".utf8))
            _ = try parser.parse(Data("data: \(String(repeating: "x", count: 600))\n".utf8))
        }
        // A line with no end is bounded too.
        var endless = EventStreamParser(maximumEventSize: 1_000)
        let error = #expect(throws: NetworkError.self) {
            for _ in 0..<20 { _ = try endless.parse(Data(repeating: UInt8(ascii: "a"), count: 100)) }
        }
        #expect(error?.code == .invalidResponse)
    }

    /// However the stream is split, the events completed before a line over the bound are returned, then the
    /// stream fails, and the long line is not kept.
    @Test func eventsBeforeALineOverTheBoundAreDeliveredWhereverTheStreamIsSplit() throws {
        let stream = Array("data: small\n\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 4_096)
        for cut in 0...stream.count {
            var parser = EventStreamParser(maximumEventSize: 1_024)
            var events: [ServerSentEvent] = []
            let error = #expect(throws: NetworkError.self, "split at \(cut)") {
                events += try parser.parse(stream[..<cut])
                events += try parser.parse(stream[cut...])
                // The call after the one that returned the events throws.
                _ = try parser.parse([UInt8]())
            }
            #expect(error?.code == .invalidResponse, "split at \(cut)")
            #expect(events == [ServerSentEvent(data: "small")], "split at \(cut)")
        }
        // In one piece: the events come back, and the next call throws, whatever it is given.
        var parser = EventStreamParser(maximumEventSize: 1_024)
        #expect(try parser.parse(stream) == [ServerSentEvent(data: "small")])
        #expect(throws: NetworkError.self) { try parser.parse(Array("\n\ndata: later\n\n".utf8)) }
        // A new connection starts afresh.
        parser.finish()
        #expect(try parser.parse(Array("data: later\n\n".utf8)) == [ServerSentEvent(data: "later")])
    }

    /// A complete line over the bound fails the stream even when it is not data.
    @Test func aCompleteLineOverTheBoundFailsWhateverItsField() throws {
        var parser = EventStreamParser(maximumEventSize: 100)
        #expect(throws: NetworkError.self) {
            try parser.parse(Array("event: \(String(repeating: "e", count: 200))\ndata: x\n\n".utf8))
        }
    }

    // MARK: Splits and random streams

    @Test func everySplitOfAStreamGivesTheSameEvents() throws {
        let stream = Array(
            "\u{FEFF}id: é1\r\nevent: ünï\r\ndata: a€b\r\n\r\n: c\rdata: 𝄞\r\rretry: 7\ndata: z\n\n".utf8)
        let whole = try {
            var parser = EventStreamParser()
            return try parser.parse(stream)
        }()
        #expect(whole.count == 3)
        for cut in 0...stream.count {
            for second in cut...stream.count {
                var parser = EventStreamParser()
                let events =
                    try parser.parse(stream[..<cut]) + parser.parse(stream[cut..<second])
                    + parser.parse(stream[second...])
                #expect(events == whole, "split at \(cut) and \(second)")
                #expect(parser.retry == .milliseconds(7))
            }
        }
    }

    @Test func seededRandomStreamsMatchTheStandardsModelWhereverTheyAreSplit() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["RESOURCEKIT_SEED"] ?? "") ?? 0x5EED_5EED
        var random = SeededGenerator(state: seed)
        for round in 0..<400 {
            let stream = randomStream(using: &random)
            let expected = EventStreamModel.parse(stream)
            var parser = EventStreamParser()
            var events: [ServerSentEvent] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + Int(random.next() % 9))
                events += try parser.parse(stream[start..<end])
                start = end
            }
            #expect(events == expected.events, "seed \(seed), round \(round)")
            #expect(parser.lastEventID == expected.lastEventID, "seed \(seed), round \(round)")
            #expect(parser.retry == expected.retry, "seed \(seed), round \(round)")
        }
    }

    @Test func randomBytesNeverCrashOrHang() throws {
        var random = SeededGenerator(state: 77)
        for _ in 0..<200 {
            var parser = EventStreamParser(maximumEventSize: 4_096)
            let bytes = (0..<Int(random.next() % 2_000)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = try? parser.parse(bytes)
            parser.finish()
        }
    }
}

/// The standard's interpretation written the plain way, over the whole stream: the reference for the fuzz.
enum EventStreamModel {
    static func parse(_ bytes: [UInt8]) -> (events: [ServerSentEvent], lastEventID: String, retry: Duration?) {
        var scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var lines: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\r" || scalar == "\n" {
                lines.append(String(current))
                current = String.UnicodeScalarView()
                if scalar == "\r", index + 1 < scalars.count, scalars[index + 1] == "\n" { index += 1 }
            } else {
                current.append(scalar)
            }
            index += 1
        }
        var events: [ServerSentEvent] = []
        var data = ""
        var type = ""
        var idBuffer = ""
        var lastEventID = ""
        var retry: Duration?
        for line in lines {
            if line.isEmpty {
                lastEventID = idBuffer
                if data.isEmpty {
                    type = ""
                    continue
                }
                if data.hasSuffix("\n") { data.removeLast() }
                events.append(ServerSentEvent(type: type.isEmpty ? "message" : type, data: data, lastEventID: idBuffer))
                data = ""
                type = ""
                continue
            }
            if line.hasPrefix(":") { continue }
            var field = line
            var value = ""
            if let colon = line.firstIndex(of: ":") {
                field = String(line[..<colon])
                value = String(line[line.index(after: colon)...])
                if value.hasPrefix(" ") { value.removeFirst() }
            }
            switch field {
            case "data": data += value + "\n"
            case "event": type = value
            case "id": if !value.contains("\u{0}") { idBuffer = value }
            case "retry":
                if !value.isEmpty, value.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }), let ms = Int64(value)
                {
                    retry = .milliseconds(ms)
                }
            default: break
            }
        }
        return (events, lastEventID, retry)
    }
}

/// A stream of random lines: fields known and unknown, comments, garbage, blank lines, every line end, text
/// with multi-byte characters, sometimes a byte order mark.
private func randomStream(using random: inout SeededGenerator) -> [UInt8] {
    let names = ["data", "data", "data", "event", "id", "retry", "", "dat", "Data", "x"]
    let texts = ["", " ", "a", " b", "é", "€uro", "𝄞", ":", " : ", "12", "0", "40x", "x\u{0}y", "ünï code"]
    let ends = ["\n", "\r", "\r\n"]
    var stream: [UInt8] = random.next() % 4 == 0 ? [0xEF, 0xBB, 0xBF] : []
    for _ in 0..<Int(random.next() % 40) {
        let end = ends[Int(random.next() % 3)]
        switch random.next() % 6 {
        case 0: stream += Array(end.utf8)
        case 1: stream += Array(": comment \(texts[Int(clamping: random.next() % UInt64(texts.count))])\(end)".utf8)
        default:
            let name = names[Int(clamping: random.next() % UInt64(names.count))]
            let text = texts[Int(clamping: random.next() % UInt64(texts.count))]
            let colon = random.next() % 5 == 0 ? "" : ":"
            stream += Array("\(name)\(colon)\(text)\(end)".utf8)
        }
    }
    return stream
}
