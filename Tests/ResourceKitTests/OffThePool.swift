import Dispatch
import Testing

/// Runs each test of a suite on a Dispatch queue of its own instead of Swift's cooperative pool: for tests
/// that block on the disk (`fsync` in every batch a storage writes) or on another thread. While they block,
/// the pool's threads, two on a two-core machine, stay free for the tests that run beside them.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope runs nothing of its tests: each test case gets an executor of its own.
        guard testCase != nil, !test.isSuite else { return try await function() }
        try await withTaskExecutorPreference(QueueExecutor(label: test.name)) { try await function() }
    }
}

extension Trait where Self == OffThePool {
    /// Runs the tests on a Dispatch queue of their own, off the cooperative pool.
    static var offThePool: Self { OffThePool() }
}

/// A task executor that runs its jobs on a concurrent Dispatch queue, whose threads Dispatch adds when one
/// blocks, unlike the cooperative pool's.
final class QueueExecutor: TaskExecutor {
    /// The label of the executor whose queue runs the current code, for a test of the trait.
    static let label = DispatchSpecificKey<String>()

    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: "ResourceKitTests.\(label)", attributes: .concurrent)
        queue.setSpecific(key: Self.label, value: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
