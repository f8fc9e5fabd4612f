/// How often an object reads again while observed: see ``Resource/poll(_:every:jitter:)`` and
/// ``ListResource/poll(every:jitter:)``.
enum Polling {
    /// Runs until the calling task is cancelled: every `interval` (lengthened by up to a tenth by `jitter`),
    /// calls `poll` with the wait just done, unless nobody observes or a load is in flight. The next wait
    /// starts when `poll` returns, so polls never overlap.
    static func run(
        session: NetworkSession, interval: Duration, jitter: RetryPolicy.Jitter, isObserved: () -> Bool,
        isLoading: () -> Bool, poll: (Duration) async -> Void
    ) async {
        guard interval > .zero else { return }
        while !Task.isCancelled {
            let wait = jitter.lengthening(seconds: interval / .seconds(1), byUpToOneIn: 10)
            do {
                try await session.sleep(for: wait)
            } catch {
                return
            }
            guard isObserved(), !isLoading() else { continue }
            await poll(wait)
        }
    }
}

extension Resource where Remote: Readable {
    /// Reads `request` again every `interval` while the resource is observed, until the calling task is
    /// cancelled.
    ///
    /// ```swift
    /// let polling = Task { await post.poll(post.id, every: .seconds(30)) }
    /// // …
    /// polling.cancel()
    /// ```
    ///
    /// - Paused while nobody observes (no ``states`` stream, ``observerCount`` zero): a tick then sends
    ///   nothing, and polling goes on at the next tick once someone observes again.
    /// - Never overlapping: a tick while the state is loading sends nothing, and a value read within the last
    ///   interval (by anyone) is fresh enough (``ReadPolicy/skipIfFresh(maxAge:)``). The next wait starts
    ///   when the poll's read has ended.
    /// - Waits run on the session's ``NetworkSession/Configuration/clock``; `jitter` lengthens each by up to a tenth.
    ///   An interval that is not positive polls never.
    /// - A failed poll shows in the state, as any read's failure, and polling goes on.
    /// - Parameters:
    ///   - request: What to read.
    ///   - interval: The time between polls.
    ///   - jitter: How each wait is lengthened at random; ``RetryPolicy/Jitter/none`` for exact waits.
    public func poll(_ request: Remote.ReadRequest, every interval: Duration, jitter: RetryPolicy.Jitter = .full)
        async
    {
        await Polling.run(
            session: session, interval: interval, jitter: jitter, isObserved: { observerCount > 0 },
            isLoading: { state.isLoading }
        ) { wait in
            _ = try? await read(request, policy: .skipIfFresh(maxAge: wait))
        }
    }
}

extension ListResource {
    /// Reloads the first page every `interval` while the list is observed, until the calling task is
    /// cancelled; as ``Resource/poll(_:every:jitter:)`` does, paused while nobody observes and never while the
    /// list is loading (a page or a refresh).
    /// - Parameters:
    ///   - interval: The time between polls.
    ///   - jitter: How each wait is lengthened at random, by up to a tenth.
    public func poll(every interval: Duration, jitter: RetryPolicy.Jitter = .full) async {
        await Polling.run(
            session: session, interval: interval, jitter: jitter, isObserved: { observerCount > 0 },
            isLoading: { listState.content.isLoading || listState.pagination.isLoadingNextPage }
        ) { _ in
            _ = try? await refresh()
        }
    }
}

extension ResourceStore {
    /// Reads again what is observed and stale: every observed resource whose value is not fresh by its type's
    /// ``Readable/maxAge`` (or was invalidated), and every observed list's first page. Returns when those
    /// reads end; their failures show in their states.
    ///
    /// Call it when the app comes back: when connectivity returns, when the app becomes active. What nobody
    /// observes is not read now: a screen that shows it later reads it as it appears (a read with a
    /// ``ReadPolicy`` such as ``ReadPolicy/skipIfFresh(maxAge:)`` asks the server when the value is stale).
    public func revalidateObserved() async {
        let members: [any StoreMember] = withRegistry { registry in
            var members: [any StoreMember] = []
            for holders in registry.resourcesByItem.values { members += holders.values.compactMap(\.object) }
            for holders in registry.listsByItem.values { members += holders.values.compactMap(\.object) }
            return members
        }
        let observed = members.filter(\.isObserved)
        await withTaskGroup(of: Void.self) { group in
            for member in observed { group.addTask { await member.refetch(ifStale: true) } }
        }
    }

    /// Calls ``revalidateObserved()`` for each element of `signals`, one at a time, until they end or the
    /// calling task is cancelled: connect it to whatever tells your app that connectivity returned or that it
    /// became active.
    ///
    /// ```swift
    /// Task { await store.revalidateObserved(whenever: connectivityRestored) }
    /// ```
    /// - Parameter signals: The events that call for a revalidation; their values are ignored.
    public func revalidateObserved<Signals: AsyncSequence & Sendable>(whenever signals: Signals) async
    where Signals.Failure == Never {
        for await _ in signals {
            guard !Task.isCancelled else { return }
            await revalidateObserved()
        }
    }
}
