import Foundation
import ResourceKit
import ResourceKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `catch` clauses users write around ResourceKit's calls, which throw `NetworkError` (typed throws),
/// compiled as a user's module compiles them: no `@testable`, in the shapes that have crashed Swift compilers
/// (two `do`/`catch` blocks in one async function, a `catch where` over the typed error). A compiler that
/// crashes on one of them fails this target's build, and so `Scripts/test`.
@Suite struct CatchPatternTests {
    let session: NetworkSession
    let endpoint = Endpoint(.get, "posts/1")

    init() {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", status: 503, body: Data(#"{"message":"down"}"#.utf8))
        stub.stub(.get, "/api/notes/1", json: #"{"id":"1","text":"a"}"#)
        stub.stub(.get, "/api/notes/2", status: 503, body: Data(#"{"message":"down"}"#.utf8))
        session = NetworkSession(baseURL: "http://catch.test/api", transport: stub)
    }

    /// Two `do`/`catch` blocks, the second `catch where error.isUnreachable`.
    func twoBlocksThenCatchWhere() async -> [String] {
        var seen: [String] = []
        do {
            try await session.send(endpoint)
            seen.append("sent")
        } catch {
            seen.append("first: \(error.code)")
        }
        do {
            try await session.send(endpoint)
            seen.append("sent")
        } catch  where error.isUnreachable {
            seen.append("unreachable")
        } catch {
            seen.append("second: \(error.code)")
        }
        return seen
    }

    /// `catch let e as NetworkError` and `catch is NetworkError` over a call that throws untyped `any Error`.
    func castingCatches() async -> [String] {
        var seen: [String] = []
        do {
            try await untyped { try await session.send(endpoint) }
        } catch let error as NetworkError {
            seen.append("as: \(error.code)")
        } catch {
            seen.append("other")
        }
        do {
            try await untyped { try await session.send(endpoint) }
        } catch is NetworkError {
            seen.append("is")
        } catch {
            seen.append("other")
        }
        return seen
    }

    /// `catch .cancelled` (an expression pattern over the typed error) and a `catch where` on its status.
    func patternCatches() async -> [String] {
        var seen: [String] = []
        // A task that is cancelled before it sends: `catch .cancelled` over the typed error.
        let task = Task { [session, endpoint] () async -> String in
            withUnsafeCurrentTask { $0?.cancel() }
            // In a closure the `do` names its error type; in a function it is inferred from the calls.
            do throws(NetworkError) {
                try await session.send(endpoint)
                return "sent"
            } catch .cancelled {
                return "cancelled"
            } catch {
                return "other: \(error.code)"
            }
        }
        seen.append(await task.value)
        do {
            try await session.send(endpoint)
        } catch  where error.statusCode == 503 {
            seen.append("503")
        } catch .timeout {
            seen.append("timeout")
        } catch {
            seen.append("other: \(error.code)")
        }
        return seen
    }

    /// The same two-block shape over a resource's reads that return values, on the main actor, with a `let`
    /// assigned in the first block and `return`s inside the catches.
    @MainActor func readTwice(_ note: Resource<RemoteCatchNote>) async -> String {
        let first: String
        do {
            first = try await note.read("1").text
        } catch {
            return "first: \(error.code)"
        }
        do {
            let second = try await note.read("2")
            return first + second.text
        } catch  where error.isUnreachable {
            return "unreachable"
        } catch let error where error.statusCode == 503 {
            return "503 after \(first)"
        } catch {
            return "second: \(error.code)"
        }
    }

    func untyped(_ body: () async throws -> Void) async throws { try await body() }

    @Test func everyShapeCatchesWhatItSays() async {
        #expect(await twoBlocksThenCatchWhere() == ["first: httpStatus", "second: httpStatus"])
        #expect(await castingCatches() == ["as: httpStatus", "is"])
        #expect(await patternCatches() == ["cancelled", "503"])
        #expect(await readTwice(Resource(session: session)) == "503 after a")
    }
}

struct CatchNote: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var text: String
}

struct RemoteCatchNote: Readable {
    typealias Value = CatchNote
    typealias ReadRequest = String
    static func readEndpoint(for id: String) -> Endpoint { Endpoint(.get, "notes").appending(id: id) }
}
