import Testing

@testable import ResourceKit

/// The list machine driven as a value, as `ResourceMachineTests` drives the resource's: scripts of events with
/// their ranks and times given, and the effects and state after each asserted exactly.
@Suite struct ListMachineTests {
    struct Item: Identifiable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    typealias Machine = ListMachine<Item, Int>
    typealias Outcome = ListOutcome<Item, Int>

    static let work: OperationWork<Outcome, Machine.Context> = { _ in .failure(.cancelled) }

    static func page(_ ids: ClosedRange<Int>, next: Int?) -> Outcome {
        let items = ids.map { Item(id: $0, name: "\($0)") }
        return .page(FetchedPage(items: items, nextKey: next, context: PageContext(itemCount: items.count)))
    }

    @Test func pagesAppendInOrderAndTheLastOneEndsThePagination() async throws {
        var machine = Machine(state: ListState(), firstPageKey: 1)
        var ranks = Ranks.scripted(from: 1)
        let first = try await Waiter<Outcome>.make()
        let askedFirst = machine.askNextPage(
            CallID.next(), first.continuation, firstPageKey: 1, ranks: &ranks, work: Self.work)
        askedFirst.resumeCallers()
        #expect(askedFirst.starts.count == 1)
        #expect(machine.state.content == .loading(previous: nil))
        let firstDone = machine.finish(
            askedFirst.starts[0].operation, with: .success(Self.page(1...3, next: 2)), ranks: &ranks, now: .seconds(5))
        firstDone.resumeCallers()
        #expect(machine.state.items.map(\.id) == [1, 2, 3])
        #expect(machine.state.pagination.hasMore)
        #expect(machine.state.pagination.pagesLoaded == 1)
        #expect(machine.loadedAt == .seconds(5))
        _ = await first.answered.value

        let second = try await Waiter<Outcome>.make()
        let askedSecond = machine.askNextPage(
            CallID.next(), second.continuation, firstPageKey: 1, ranks: &ranks, work: Self.work)
        askedSecond.resumeCallers()
        #expect(askedSecond.starts.count == 1)
        #expect(machine.state.pagination.isLoadingNextPage)
        #expect(machine.state.content == .available([1, 2, 3].map { Item(id: $0, name: "\($0)") }))
        let secondDone = machine.finish(
            askedSecond.starts[0].operation, with: .success(Self.page(4...5, next: nil)), ranks: &ranks,
            now: .seconds(9))
        secondDone.resumeCallers()
        #expect(machine.state.items.map(\.id) == [1, 2, 3, 4, 5])
        #expect(!machine.state.pagination.hasMore)
        #expect(!machine.state.pagination.isLoadingNextPage)
        // The list is as old as its oldest page.
        #expect(machine.loadedAt == .seconds(5))
        _ = await second.answered.value

        // Past the last page, a next page answers at once and sends nothing.
        let past = try await Waiter<Outcome>.make()
        let askedPast = machine.askNextPage(
            CallID.next(), past.continuation, firstPageKey: 1, ranks: &ranks, work: Self.work)
        askedPast.resumeCallers()
        #expect(askedPast.starts.isEmpty)
        #expect(askedPast.resumes.count == 1)
        _ = await past.answered.value
    }

    @Test func aRefreshSupersedesTheNextPageInFlightAndAnUndatedAnswerKeepsNoTime() async throws {
        var machine = Machine(state: ListState(), firstPageKey: 1)
        var ranks = Ranks.scripted(from: 1)
        let first = try await Waiter<Outcome>.make()
        let askedFirst = machine.askFirstPage(CallID.next(), first.continuation, key: 1, ranks: &ranks, work: Self.work)
        askedFirst.resumeCallers()
        // No time given: a list whose items are not whole values dates nothing.
        let firstDone = machine.finish(
            askedFirst.starts[0].operation, with: .success(Self.page(1...2, next: 2)), ranks: &ranks, now: nil)
        firstDone.resumeCallers()
        #expect(machine.loadedAt == nil)
        _ = await first.answered.value

        let next = try await Waiter<Outcome>.make()
        let askedNext = machine.askNextPage(
            CallID.next(), next.continuation, firstPageKey: 1, ranks: &ranks, work: Self.work)
        askedNext.resumeCallers()
        let refresh = try await Waiter<Outcome>.make()
        let askedRefresh = machine.askFirstPage(
            CallID.next(), refresh.continuation, key: 1, ranks: &ranks, work: Self.work)
        askedRefresh.resumeCallers()
        #expect(askedRefresh.starts.count == 1)

        // The refreshed first page replaces the list: the next page's caller is told it was superseded, and
        // its request is cancelled once its task is known.
        let refreshed = machine.finish(
            askedRefresh.starts[0].operation, with: .success(Self.page(1...2, next: 2)), ranks: &ranks, now: nil)
        refreshed.resumeCallers()
        #expect(refreshed.resumes.count == 2)
        if case .failure(let error) = await next.answered.value {
            #expect(error == .superseded)
        } else {
            Issue.record("the next page's caller got an answer")
        }
        let task = Task<Void, Never> {}
        #expect(machine.attach(task, to: askedNext.starts[0].operation).cancels.count == 1)
        // Its late answer adds nothing.
        let late = machine.finish(
            askedNext.starts[0].operation, with: .success(Self.page(3...4, next: nil)), ranks: &ranks, now: nil)
        #expect(late.resumes.isEmpty)
        #expect(machine.state.items.map(\.id) == [1, 2])
        _ = await refresh.answered.value
    }

    @Test func anItemCreatedAfterAPageWasSentIsKeptWhenThatPageLands() async throws {
        var machine = Machine(state: ListState(), firstPageKey: 1)
        var ranks = Ranks.scripted(from: 1)
        let reader = try await Waiter<Outcome>.make()
        // The page is sent at rank 1.
        let read = machine.askFirstPage(CallID.next(), reader.continuation, key: 1, ranks: &ranks, work: Self.work)
        read.resumeCallers()
        let writer = try await Waiter<Outcome>.make()
        let write = machine.askMutation(CallID.next(), writer.continuation, ranks: &ranks, work: Self.work)
        write.resumeCallers()
        let created = Item(id: 9, name: "new")
        let wrote = machine.finish(
            write.starts[0].operation, with: .success(.inserted(created, nil)), ranks: &ranks, now: nil)
        wrote.resumeCallers()
        // Ranks: the page's caller 1, the mutation's caller 2, the change its answer applied 3.
        #expect(machine.changes[9]?.rank == 3)
        #expect(ranks.next == 4)
        _ = await writer.answered.value

        // The page was sent before the item was created: the item is kept after the page's items.
        let readDone = machine.finish(
            read.starts[0].operation, with: .success(Self.page(1...2, next: nil)), ranks: &ranks, now: nil)
        readDone.resumeCallers()
        #expect(machine.state.items.map(\.id) == [1, 2, 9])
        _ = await reader.answered.value
    }
}
