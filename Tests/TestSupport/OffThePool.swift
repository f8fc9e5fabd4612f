package import Dispatch
package import Testing

/// Runs each test of a suite on a Dispatch queue of its own instead of Swift's cooperative pool: for tests
/// that block on the disk (`fsync` in every batch a storage writes) or on another thread. While they block,
/// the pool's threads, two on a two-core machine, stay free for the tests that run beside them.
package struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope runs nothing of its tests: each test case gets an executor of its own.
        guard testCase != nil, !test.isSuite else { return try await function() }
        try await withTaskExecutorPreference(QueueExecutor(label: test.name)) { try await function() }
    }
}

extension Trait where Self == OffThePool {
    /// Runs the tests on a Dispatch queue of their own, off the cooperative pool.
    package static var offThePool: Self { OffThePool() }
}

/// A task executor that runs its jobs on a concurrent Dispatch queue, whose threads Dispatch adds when one
/// blocks, unlike the cooperative pool's.
package final class QueueExecutor: TaskExecutor {
    /// The label of the executor whose queue runs the current code, for a test of the trait.
    package static let label = DispatchSpecificKey<String>()

    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: "ResourceKit.tests.\(label)", attributes: .concurrent)
        queue.setSpecific(key: Self.label, value: label)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
