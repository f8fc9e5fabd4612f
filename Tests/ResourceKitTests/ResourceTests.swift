import Foundation
import Observation
import ResourceKit
import ResourceKitTesting
import StoreTestSupport
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1))) struct ResourceTests {
    let v = Post(id: "1", title: "v")
    let w = Post(id: "1", title: "w")

    @Test func readSequencesAreExact() async throws {
        let stub = StubTransport()
        let resource = Resource<RemotePost>(session: makeSession(stub))
        let recorder = resource.recordStates()

        stub.stub(.get, "/api/posts/1", json: json(v))
        try await resource.read("1")
        try await recorder.expect([.idle, .loading(previous: nil), .available(v)])

        stub.stub(.get, "/api/posts/1", json: json(w))
        try await resource.read("1")
        stub.stub(.get, "/api/posts/1", status: 500, json: "{}")
        await #expect(throws: NetworkError.httpStatus(code: 500, body: Data("{}".utf8))) {
            try await resource.read("1")
        }
        try await recorder.expect([
            .idle, .loading(previous: nil), .available(v),
            .loading(previous: v), .available(w),
            .loading(previous: w), .failure(.httpStatus(code: 500, body: Data("{}".utf8)), previous: w),
        ])
    }

    @Test func concurrentIdenticalReadsShareOneRequest() async throws {
        let stub = StubTransport()
        let latch = AsyncLatch()
        let post = v
        stub.stub(.get, "/api/posts/1", json: json(post), heldBy: latch)
        let resource = Resource<RemotePost>(session: makeSession(stub))
        let values = try await withThrowingTaskGroup(of: Post.self) { group in
            for _ in 0..<100 { group.addTask { try await resource.read("1") } }
            try await stub.waitForRequests(1, timeout: .seconds(30))
            // Every caller has joined once the request is in flight; let them all register first.
            try await waitUntil("100 callers waiting") { resource.waitingCallerCount == 100 }
            latch.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stub.requestCount == 1)
        #expect(values.count == 100)
        #expect(values.allSatisfy { $0 == post })
    }

    @Test(arguments: [true, false])
    func newerReadWinsWhateverTheResponseOrder(slowFirst: Bool) async throws {
        let stub = StubTransport()
        let first = AsyncLatch()
        let second = AsyncLatch()
        let one = Post(id: "1", title: "one")
        let two = Post(id: "2", title: "two")
        stub.stub(.get, "/api/posts/1", json: json(one), heldBy: first)
        stub.stub(.get, "/api/posts/2", json: json(two), heldBy: second)
        let resource = Resource<RemotePost>(session: makeSession(stub))
        let recorder = resource.recordStates()
        let readOne = Task { try await resource.read("1") }
        try await stub.waitForRequests(1, timeout: .seconds(30))
        let readTwo = Task { try await resource.read("2") }
        try await stub.waitForRequests(2, timeout: .seconds(30))
        if slowFirst {
            second.open()
            #expect(try await readTwo.value == two)
            first.open()
            #expect(try await readOne.value == one)
        } else {
            first.open()
            #expect(try await readOne.value == one)
            second.open()
            #expect(try await readTwo.value == two)
        }
        #expect(resource.state == .available(two))
        // Read 2 was asked last, so its answer is what the state shows, whatever the order. An older answer
        // that arrives first does not land, but it is the latest value known while read 2 is in flight.
        try await recorder.expect(
            slowFirst
                ? [.idle, .loading(previous: nil), .available(two)]
                : [.idle, .loading(previous: nil), .loading(previous: one), .available(two)])
    }

    @Test(arguments: [
        ResourceState<Post>.idle, .available(Post(id: "1", title: "v")),
        .failure(.timeout, previous: Post(id: "1", title: "v")),
    ])
    func cancellingTheOnlyReaderRestoresTheState(initial: ResourceState<Post>) async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/2", json: json(w), heldBy: AsyncLatch())
        let resource = Resource<RemotePost>(session: makeSession(stub), state: initial)
        let recorder = resource.recordStates()
        let task = Task { try await resource.read("2") }
        try await stub.waitForRequests(1, timeout: .seconds(30))
        task.cancel()
        await #expect(throws: NetworkError.cancelled) { try await task.value }
        #expect(resource.state == initial)
        try await recorder.expect([initial, .loading(previous: initial.value), initial])
        // The transport saw the cancellation: its delayed response was abandoned.
        try await waitUntil("the transport sees the cancellation") { stub.cancellationCount == 1 }
        #expect(stub.cancellationCount == 1)
    }

    @Test func cancellingOneOfTwoReadersKeepsTheRequest() async throws {
        let stub = StubTransport()
        let latch = AsyncLatch()
        let post = v
        stub.stub(.get, "/api/posts/1", json: json(post), heldBy: latch)
        let resource = Resource<RemotePost>(session: makeSession(stub))
        let cancelled = Task { try await resource.read("1") }
        let kept = Task { try await resource.read("1") }
        try await stub.waitForRequests(1, timeout: .seconds(30))
        try await waitUntil("2 callers waiting") { resource.waitingCallerCount == 2 }
        cancelled.cancel()
        await #expect(throws: NetworkError.cancelled) { try await cancelled.value }
        latch.open()
        #expect(try await kept.value == post)
        #expect(resource.state == .available(post))
        #expect(stub.requestCount == 1)
    }

    @Test func readOfAnotherIDGoesToTheNetwork() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([v, Post(id: "2", title: "two")], into: "posts")
        let resource = Resource<RemotePost>(session: makeSession(backend))
        try await resource.read("1", policy: .skipIfLoaded)
        try await resource.read("2", policy: .skipIfLoaded)
        #expect(resource.value?.id == "2")
        #expect(backend.requestLog.count == 2)
        try await resource.read("2", policy: .skipIfLoaded)
        #expect(backend.requestLog.count == 2)
        try await resource.read("2")
        #expect(backend.requestLog.count == 3)
    }

    @Test func mutationsArriveInCallOrder() async throws {
        let stub = StubTransport()
        let latch = AsyncLatch()
        let post = v
        stub.stub(.patch, "/api/posts/1", json: json(post), heldBy: latch)
        stub.stub(.delete, "/api/posts/1", status: 204)
        let resource = Resource<RemotePost>(session: makeSession(stub), state: .available(v))
        let recorder = resource.recordStates()
        // Two tasks start in no guaranteed order: ask the delete only once the update is in flight.
        let update = Task { try await resource.update(post) }
        try await stub.waitForRequests(1, timeout: .seconds(30))
        let delete = Task { try await resource.delete(post) }
        try await waitUntil("the delete waits behind the update") { resource.waitingCallerCount == 2 }
        latch.open()
        _ = try await update.value
        #expect(try await delete.value == nil)
        #expect(stub.requests.map(\.httpMethod) == ["PATCH", "DELETE"])
        #expect(resource.state == .idle)
        // The delete's turn comes as the update completes: the state stays `loading`, now over the update's
        // answer, until the delete ends.
        try await recorder.expect([.available(v), .loading(previous: v), .loading(previous: v), .idle])
    }

    @Test func thousandObserversGetTheFinalStateAndCancelledOnesUnregister() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", json: json(v))
        var resource: Resource<RemotePost>? = Resource<RemotePost>(session: makeSession(stub))
        let target = v
        var tasks: [Task<Bool, Never>] = []
        for _ in 0..<1000 {
            let stream = try #require(resource).states
            tasks.append(
                Task {
                    for await state in stream where state == .available(target) { return true }
                    return false
                })
        }
        #expect(resource?.observerCount == 1000)
        try await resource?.read("1")
        for task in tasks { #expect(await task.value) }

        let watchers = (0..<1000).map { _ in
            let stream = resource!.states
            return Task {
                var count = 0; for await _ in stream { count += 1 }; return count
            }
        }
        #expect(resource?.observerCount == 1000)
        for watcher in watchers.dropLast() { watcher.cancel() }
        for watcher in watchers.dropLast() { _ = await watcher.value }
        #expect(resource?.observerCount == 1)
        resource = nil
        let seen = await watchers.last!.value
        #expect(seen >= 1)
    }

    @Test func resourceIsReleasedAfterItsOperations() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([v], into: "posts")
        weak var released: Resource<RemotePost>?
        var stream: AsyncStream<ResourceState<Post>>?
        do {
            let resource = Resource<RemotePost>(session: makeSession(backend))
            try await resource.read("1")
            try await resource.update(w)
            try await resource.delete(w)
            stream = resource.states
            released = resource
        }
        // The stream ends when the resource is gone, once its operations' tasks let go of it.
        var seen: [ResourceState<Post>] = []
        for await state in try #require(stream) { seen.append(state) }
        #expect(seen == [.idle])
        #expect(released == nil)
    }

    @Test func observationTrackingFiresOnChange() async throws {
        let stub = StubTransport()
        stub.stub(.get, "/api/posts/1", json: json(v))
        let resource = Resource<RemotePost>(session: makeSession(stub))
        let fired = Locked(0)
        withObservationTracking {
            _ = resource.state
        } onChange: {
            fired.withLock { $0 += 1 }
        }
        #expect(fired.withLock { $0 } == 0)
        try await resource.read("1")
        #expect(fired.withLock { $0 } == 1)
    }

    @Test func availableStatesCompareTheirPayloads() {
        #expect(ResourceState<Post>.available(v) != .available(w))
        #expect(ResourceState<Post>.available(v) == .available(v))
        #expect(ResourceState<Post>.loading(previous: v) != .loading(previous: w))
        #expect(ResourceState<Post>.failure(.timeout, previous: v) != .failure(.cancelled, previous: v))
    }

    @Test func requestLessVariantsDeriveFromTheValue() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed([v], into: "posts")
        let resource = Resource<RemotePost>(session: makeSession(backend))
        await #expect(
            throws: NetworkError.invalidRequest("RemotePost cannot derive a read request from the current state")
        ) {
            try await resource.read()
        }
        await #expect(
            throws: NetworkError.invalidRequest("RemotePost cannot derive an update request from the current state")
        ) {
            try await resource.update()
        }
        let fixed = Resource<RemotePost>(session: makeSession(backend), state: .available(v))
        #expect(try await fixed.read() == v)
        var edited = v
        edited.title = "edited"
        let editing = Resource<RemotePost>(session: makeSession(backend), state: .available(edited))
        #expect(try await editing.update() == edited)
        #expect(try await fixed.read() == edited)
        #expect(try await fixed.delete() == nil)
        #expect(fixed.state == .idle)
        #expect(backend.records(in: "posts").isEmpty)
    }

    @Test func fixedStateResourcesNeedNoNetwork() async throws {
        let preview = Resource<RemotePost>.placeholder()
        #expect(preview.state == .available(.placeholder))
        let failed = Resource<RemotePost>(state: .failure(.timeout, previous: v))
        #expect(failed.value == v)
        await #expect(throws: NetworkError.self) { try await preview.read("1") }
    }

    @Test func stressOfMixedOperationsEndsInTheLastAppliedState() async throws {
        let backend = InMemoryBackend(basePath: "/api")
        try backend.seed((0..<10).map { Post(id: "\($0)", title: "t\($0)") }, into: "posts")
        let resource = Resource<RemotePost>(session: makeSession(backend))
        let recorder = resource.recordStates()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let id = "\(index % 10)"
                    switch index % 4 {
                    case 0, 1: _ = try? await resource.read(id)
                    case 2: _ = try? await resource.update(Post(id: id, title: "u\(index)"))
                    default:
                        let task = Task { try await resource.read(id) }
                        if index % 8 == 3 { task.cancel() }
                        _ = try? await task.value
                    }
                }
            }
        }
        let final = resource.state
        #expect(!final.isLoading)
        let states = try await recorder.wait(for: "the final state") { $0.last.map { "\($0)" } == "\(final)" }
        #expect("\(states.last!)" == "\(final)")
        // The resource keeps working afterwards.
        let fresh = try await resource.read("3")
        #expect(resource.state == .available(fresh))
    }
}
