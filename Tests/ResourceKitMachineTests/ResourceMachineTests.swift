import Testing

@testable import ResourceKit

/// The resource machine driven as a value: each test is a script of events, and each event's effects and the
/// state after it are asserted exactly. No host, lock, task or transport: what the machine decides is all
/// there is. The model tests (`ResourceModelTests`) check the same rules through a `Resource`, on seeded
/// schedules; these name each rule and show the transition that keeps it.
@Suite struct ResourceMachineTests {
    typealias Machine = ResourceMachine<Int>
    typealias Outcome = ResourceOutcome<Int>

    /// Work the machine only hands back: these scripts never run it.
    static let work: OperationWork<Outcome, Machine.Context> = { _ in .failure(.cancelled) }
    /// When the scripts' answers land, on the session's timeline.
    static let now = Duration.seconds(100)
    static let key = RequestKey(method: "GET", path: "/items/1", query: [], headers: [])

    @Test func aReadShowsLoadingUntilItsAnswerLandsAndAnswersItsCaller() async throws {
        var machine = Machine(state: .idle)
        var ranks = Ranks.scripted(from: 1)
        let caller = try await Waiter<Outcome>.make()
        let asked = machine.askRead(
            CallID.next(), caller.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        asked.resumeCallers()
        #expect(asked.starts.count == 1)
        #expect(asked.starts.first?.isImmediate == true)
        #expect(asked.resumes.isEmpty && asked.cancels.isEmpty)
        #expect(machine.state == .loading(previous: nil))
        #expect(machine.waitingCallerCount == 1)

        let operation = asked.starts[0].operation
        let finished = machine.finish(operation, with: .success(.value(7)), ranks: &ranks, now: Self.now)
        finished.resumeCallers()
        #expect(finished.starts.isEmpty && finished.cancels.isEmpty)
        #expect(machine.state == .available(7))
        #expect(machine.version == 2)
        #expect(machine.waitingCallerCount == 0)
        // The read's answer stands for its caller's rank (1, drawn when it asked), and is dated when it lands;
        // the finish drew the next rank (2), for a mutation's completion.
        #expect(machine.settledRank == 1)
        #expect(machine.loadedAt == Self.now)
        #expect(ranks.next == 3)
        #expect(await caller.value == 7)
    }

    @Test func aMutationsAnswerStandsForItsCompletionAndAFailureDatesNothing() async throws {
        var machine = Machine(state: .available(1))
        var ranks = Ranks.scripted(from: 10)
        let writer = try await Waiter<Outcome>.make()
        let wrote = machine.askMutation(CallID.next(), writer.continuation, ranks: &ranks, work: Self.work)
        wrote.resumeCallers()
        let done = machine.finish(wrote.starts[0].operation, with: .success(.value(2)), ranks: &ranks, now: .seconds(7))
        done.resumeCallers()
        // Asked at 10, completed at 11: newer than every read asked before the completion.
        #expect(machine.settledRank == 11)
        #expect(machine.loadedAt == .seconds(7))
        #expect(await writer.value == 2)

        let reader = try await Waiter<Outcome>.make()
        let read = machine.askRead(
            CallID.next(), reader.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        read.resumeCallers()
        let failed = machine.finish(read.starts[0].operation, with: .failure(.timeout), ranks: &ranks, now: .seconds(9))
        failed.resumeCallers()
        #expect(machine.state == .failure(.timeout, previous: 2))
        #expect(machine.settledRank == 12)
        // A failure changes no value: the value's rank and its time stay the mutation's.
        #expect(machine.valueRank == 11)
        #expect(machine.loadedAt == .seconds(7))
        #expect(await reader.error == .timeout)
    }

    @Test func aSecondReadOfTheSameRequestJoinsTheFirstAndOneAnswerServesBoth() async throws {
        var machine = Machine(state: .idle)
        var ranks = Ranks.scripted(from: 1)
        let (first, second) = (try await Waiter<Outcome>.make(), try await Waiter<Outcome>.make())
        let askedFirst = machine.askRead(
            CallID.next(), first.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        askedFirst.resumeCallers()
        let askedSecond = machine.askRead(
            CallID.next(), second.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        askedSecond.resumeCallers()
        #expect(askedFirst.starts.count == 1)
        #expect(askedSecond.starts.isEmpty && askedSecond.resumes.isEmpty)
        #expect(machine.waitingCallerCount == 2)
        // Already loading: the join changes nothing observers see.
        #expect(machine.version == 1)

        let finished = machine.finish(
            askedFirst.starts[0].operation, with: .success(.value(3)), ranks: &ranks, now: Self.now)
        finished.resumeCallers()
        #expect(finished.resumes.count == 2)
        #expect(machine.state == .available(3))
        #expect(await first.value == 3)
        #expect(await second.value == 3)
    }

    @Test func aCallerThatLeavesIsAnsweredCancelledAndTheStateIsAsIfItNeverAsked() async throws {
        var machine = Machine(state: .available(1))
        var ranks = Ranks.scripted(from: 1)
        let caller = try await Waiter<Outcome>.make()
        let call = CallID.next()
        let asked = machine.askRead(
            call, caller.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        asked.resumeCallers()
        #expect(machine.state == .loading(previous: 1))

        let left = machine.cancel(call)
        left.resumeCallers()
        #expect(left.resumes.count == 1)
        #expect(machine.state == .available(1))
        #expect(machine.version == 2)
        #expect(machine.waitingCallerCount == 0)
        #expect(await caller.error == .cancelled)

        // The abandoned operation's task is cancelled as soon as the host attaches it.
        let task = Task<Void, Never> {}
        let attached = machine.attach(task, to: asked.starts[0].operation)
        #expect(attached.cancels.count == 1)
        // Its late answer answers no one and changes nothing.
        let finished = machine.finish(
            asked.starts[0].operation, with: .success(.value(9)), ranks: &ranks, now: Self.now)
        finished.resumeCallers()
        #expect(finished.resumes.isEmpty)
        #expect(machine.state == .available(1))
        #expect(machine.version == 2)
    }

    @Test func skipIfLoadedAnswersFromWhatTheSameRequestLoadedWithoutAStart() async throws {
        var machine = Machine(state: .idle)
        var ranks = Ranks.scripted(from: 1)
        let caller = try await Waiter<Outcome>.make()
        let asked = machine.askRead(
            CallID.next(), caller.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        asked.resumeCallers()
        let finished = machine.finish(
            asked.starts[0].operation, with: .success(.value(5)), ranks: &ranks, now: Self.now)
        finished.resumeCallers()

        let again = try await Waiter<Outcome>.make()
        let skipped = machine.askRead(
            CallID.next(), again.continuation, key: Self.key, policy: .skipIfLoaded, ranks: &ranks, work: Self.work)
        skipped.resumeCallers()
        #expect(skipped.starts.isEmpty)
        #expect(skipped.resumes.count == 1)
        #expect(machine.version == 2)
        #expect(await again.value == 5)

        // Another request's read is not answered by this one's value.
        let other = try await Waiter<Outcome>.make()
        let sent = machine.askRead(
            CallID.next(), other.continuation, key: RequestKey(method: "GET", path: "/items/2", query: [], headers: []),
            policy: .skipIfLoaded, ranks: &ranks,
            work: Self.work)
        sent.resumeCallers()
        #expect(sent.starts.count == 1)
        #expect(sent.resumes.isEmpty)
        let done = machine.finish(sent.starts[0].operation, with: .success(.value(6)), ranks: &ranks, now: Self.now)
        done.resumeCallers()
    }

    @Test func anOptimisticChangeShowsAtOnceAndAFailureRollsItBackOverTheValueItHid() async throws {
        var machine = Machine(state: .available(1))
        var ranks = Ranks.scripted(from: 1)
        let caller = try await Waiter<Outcome>.make()
        let asked = machine.askMutation(
            CallID.next(), caller.continuation, optimistic: .value(2), ranks: &ranks, work: Self.work)
        asked.resumeCallers()
        #expect(asked.starts.count == 1)
        #expect(machine.state == .loading(previous: 2))
        let layer = machine.layers.last?.token
        #expect(layer?.hasEnded == false)

        let finished = machine.finish(asked.starts[0].operation, with: .failure(.timeout), ranks: &ranks, now: Self.now)
        finished.resumeCallers()
        #expect(machine.state == .failure(.timeout, previous: 1))
        #expect(machine.layers.isEmpty)
        #expect(layer?.hasEnded == true)
        #expect(await caller.error == .timeout)
    }

    @Test func anAnswerOlderThanACompletedMutationNeverLandsOverIt() async throws {
        var machine = Machine(state: .available(1))
        var ranks = Ranks.scripted(from: 1)
        let (reader, writer) = (try await Waiter<Outcome>.make(), try await Waiter<Outcome>.make())
        let read = machine.askRead(
            CallID.next(), reader.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        read.resumeCallers()
        let write = machine.askMutation(CallID.next(), writer.continuation, ranks: &ranks, work: Self.work)
        write.resumeCallers()
        #expect(write.starts.count == 1)

        let wrote = machine.finish(write.starts[0].operation, with: .success(.value(5)), ranks: &ranks, now: Self.now)
        wrote.resumeCallers()
        // The read was asked before the mutation completed: nothing newer than the mutation waits.
        #expect(machine.state == .available(5))
        #expect(await writer.value == 5)

        let readDone = machine.finish(read.starts[0].operation, with: .success(.value(3)), ranks: &ranks, now: Self.now)
        readDone.resumeCallers()
        #expect(machine.state == .available(5))
        // Its caller still gets the answer its request had.
        #expect(await reader.value == 3)

        // And a read asked now does not join one sent before the mutation: a new one starts.
        let next = try await Waiter<Outcome>.make()
        let asked = machine.askRead(
            CallID.next(), next.continuation, key: Self.key, policy: .always, ranks: &ranks, work: Self.work)
        asked.resumeCallers()
        #expect(asked.starts.count == 1)
        let done = machine.finish(asked.starts[0].operation, with: .success(.value(5)), ranks: &ranks, now: Self.now)
        done.resumeCallers()
    }

    @Test func mutationsRunOneAtATimeAndOneWhoseCallersLeftBeforeItsTurnNeverRuns() async throws {
        var machine = Machine(state: .available(0))
        var ranks = Ranks.scripted(from: 1)
        let (first, second, third) = (
            try await Waiter<Outcome>.make(), try await Waiter<Outcome>.make(), try await Waiter<Outcome>.make()
        )
        let askedFirst = machine.askMutation(CallID.next(), first.continuation, ranks: &ranks, work: Self.work)
        askedFirst.resumeCallers()
        let secondCall = CallID.next()
        let askedSecond = machine.askMutation(secondCall, second.continuation, ranks: &ranks, work: Self.work)
        askedSecond.resumeCallers()
        let askedThird = machine.askMutation(CallID.next(), third.continuation, ranks: &ranks, work: Self.work)
        askedThird.resumeCallers()
        #expect(askedFirst.starts.count == 1)
        #expect(askedSecond.starts.isEmpty && askedThird.starts.isEmpty)
        #expect(machine.waitingCallerCount == 3)

        let left = machine.cancel(secondCall)
        left.resumeCallers()
        #expect(await second.error == .cancelled)
        #expect(machine.waitingCallerCount == 2)

        // The first's end starts the third, which asks the machine before it runs.
        let firstDone = machine.finish(
            askedFirst.starts[0].operation, with: .success(.value(1)), ranks: &ranks, now: Self.now)
        firstDone.resumeCallers()
        #expect(firstDone.starts.count == 1)
        #expect(firstDone.starts.first?.beginsFirst == true)
        #expect(firstDone.starts.first?.isImmediate == false)
        // The third is newer than the first's completion: the state shows it loading.
        #expect(machine.state == .loading(previous: 1))
        #expect(await first.value == 1)

        let thirdID = firstDone.starts[0].operation
        let begun = machine.begin(thirdID, ranks: &ranks)
        begun.effects.resumeCallers()
        #expect(begun.shouldRun)
        let thirdDone = machine.finish(thirdID, with: .success(.value(3)), ranks: &ranks, now: Self.now)
        thirdDone.resumeCallers()
        #expect(thirdDone.starts.isEmpty)
        #expect(machine.state == .available(3))
        #expect(await third.value == 3)
    }

    @Test func aQueuedMutationWhoseCallerLeftAfterItsStartWasHandedOutIsSkippedAtItsTurn() async throws {
        var machine = Machine(state: .available(0))
        var ranks = Ranks.scripted(from: 1)
        let (first, second) = (try await Waiter<Outcome>.make(), try await Waiter<Outcome>.make())
        let askedFirst = machine.askMutation(CallID.next(), first.continuation, ranks: &ranks, work: Self.work)
        askedFirst.resumeCallers()
        let secondCall = CallID.next()
        let queued = machine.askMutation(secondCall, second.continuation, ranks: &ranks, work: Self.work)
        queued.resumeCallers()
        let firstDone = machine.finish(
            askedFirst.starts[0].operation, with: .success(.value(1)), ranks: &ranks, now: Self.now)
        firstDone.resumeCallers()
        let secondID = firstDone.starts[0].operation

        // Its caller leaves between the start being handed to the host and the work's turn.
        let left = machine.cancel(secondCall)
        left.resumeCallers()
        #expect(await second.error == .cancelled)
        let begun = machine.begin(secondID, ranks: &ranks)
        begun.effects.resumeCallers()
        #expect(!begun.shouldRun)
        #expect(begun.effects.resumes.isEmpty)
        #expect(machine.state == .available(1))
        #expect(machine.waitingCallerCount == 0)
    }
}

/// A continuation to hand a machine as a caller's waiter, and the answer it is resumed with. The continuation
/// is made in a task of its own, whose start this awaits: the test never waits on the order of two tasks.
struct Waiter<Outcome: Sendable> {
    let continuation: OperationWaiter<Outcome>
    let answered: Task<Result<Outcome, NetworkError>, Never>

    static func make() async throws -> Waiter {
        let (made, giving) = AsyncStream.makeStream(of: OperationWaiter<Outcome>.self)
        let answered = Task { await withCheckedContinuation { giving.yield($0) } }
        var iterator = made.makeAsyncIterator()
        return Waiter(continuation: try #require(await iterator.next()), answered: answered)
    }
}

extension Waiter where Outcome == ResourceOutcome<Int> {
    /// The value this caller was answered with; `nil` for a failure or a removal.
    var value: Int? { get async { try? await answered.value.get().value } }

    /// The error this caller was answered with; `nil` for an outcome.
    var error: NetworkError? {
        get async { if case .failure(let error) = await answered.value { error } else { nil } }
    }
}

extension OperationEffects {
    /// Answers the callers these effects resume, as the host does once its lock is released: each script
    /// runs it after every transition, so that every caller is answered exactly once.
    func resumeCallers() {
        for resumption in resumes { resumption.waiter.resume(returning: resumption.result) }
    }
}
