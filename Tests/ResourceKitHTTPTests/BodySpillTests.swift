import Foundation
import TestSupport
import Testing

@testable import ResourceKitHTTP

/// The byte at `position` of a test body: a pattern with no short period, so a chunk out of place shows.
private func patternByte(_ position: Int, seed: UInt64) -> UInt8 {
    UInt8(truncatingIfNeeded: (UInt64(position) &+ seed) &* 0x9E37_79B9_7F4A_7C15 >> 29)
}

/// A body whose writer cannot wait: past its limit, chunks spill to a temporary file, gather there in 256 KB
/// writes, and come back in order.
@Suite(.timeLimit(.minutes(1)), .offThePool) struct BodySpillTests {
    /// Seeded schedules of offers and reads, with chunks from 1 byte to past the spill file's write size and
    /// limits small enough that most bodies spill, against the bytes offered.
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func whatSpillsComesBackWholeAndInOrderWhateverTheSchedule(seed: UInt64) async throws {
        var random = SeededGenerator(state: seed)
        let limit = Int.random(in: 1...(64 << 10), using: &random)
        let (body, writer) = ResponseBody.makeSpillingStream(bufferingLimit: limit)
        var iterator = body.makeAsyncIterator()
        var offered = 0
        var read = Data()
        for _ in 0..<120 {
            if offered == read.count || Int.random(in: 0..<10, using: &random) < 6 {
                let size =
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: Int.random(in: 1...64, using: &random)
                    case 1: Int.random(in: 1...(16 << 10), using: &random)
                    case 2: 16 << 10
                    default: Int.random(in: (200 << 10)...(300 << 10), using: &random)
                    }
                let chunk = Data((offered..<offered + size).map { patternByte($0, seed: seed) })
                #expect(writer.yield(chunk))
                offered += size
            } else {
                // Something waits: the read returns at once.
                let batch = try #require(try await iterator.next())
                #expect(!batch.isEmpty)
                read.append(batch)
            }
        }
        writer.finish()
        while let batch = try await iterator.next() { read.append(batch) }
        #expect(read.count == offered)
        #expect(read == Data((0..<offered).map { patternByte($0, seed: seed) }))
    }

    /// Appends gather until 256 KB: one smaller than that reaches the disk when it is read.
    @Test func aSmallAppendIsReadBackBeforeItIsWrittenOut() throws {
        let file = try #require(SpillFile())
        #expect(file.append(Data("first".utf8)))
        #expect(file.append(Data("second".utf8)))
        #expect(try file.read(upTo: 5).get() == Data("first".utf8))
        #expect(file.append(Data("third".utf8)))
        #expect(try file.read(upTo: 11).get() == Data("secondthird".utf8))
    }

    /// A disk that refuses writes: the append that fills 256 KB fails and is not kept, and what gathered before
    /// it fails to read, so a body never reads past a hole.
    @Test func aDiskThatRefusesWritesFailsTheAppendAndTheReadBehindIt() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let descriptor = open("/dev/full", O_RDWR)
        try #require(descriptor >= 0)
        let file = SpillFile(descriptor: descriptor)
        let gathered = SpillFile.writeSize - 100
        #expect(file.append(Data(repeating: 1, count: gathered)))
        #expect(!file.append(Data(repeating: 2, count: 200)))
        switch file.read(upTo: gathered) {
        case .success(let data): Issue.record("read \(data.count) bytes that never reached the disk")
        case .failure(let error):
            #expect(error.code == .file)
            #expect("\(error)".contains("spilled response body"))
        }
    }
}
