import AllocationCounter
import Foundation

/// One operation whose heap allocations are counted, and the most it may make.
struct Workload: Sendable {
    /// What one operation is, as printed.
    let name: String
    /// The most allocations one operation may make; next to each workload, a comment says how it was measured.
    let budget: Int
    /// Builds what the operation needs, uncounted, and returns the operation.
    let prepare: @Sendable () async throws -> Prepared
}

/// A workload's operation, built and ready to count.
struct Prepared: Sendable {
    /// The operation; run many times on the same objects.
    var operation: @Sendable () async throws -> Void
    /// Counted the same way and subtracted from `operation`: the part of it the workload does not measure.
    var baseline: (@Sendable () async throws -> Void)? = nil
    /// How many of the measured things one operation does (a read makes two state changes).
    var perOperation = 1
    /// Runs after counting, uncounted: checks that the operations did what the workload says, and cleans up.
    var finish: @Sendable () async throws -> Void = {}
}

/// How many times operations run, and what they made.
struct Counter: Sendable {
    /// Operations run uncounted before counting: caches, lazily built metadata and buffers that grow once are
    /// not the cost of an operation.
    var warmup = 20
    /// How many times `iterations` operations are counted; the median of the runs is the figure.
    var runs = 5
    /// Operations per run.
    var iterations = 100
    /// How long the warm-up's background work gets to finish before counting starts.
    var settling = Duration.milliseconds(20)

    /// Allocations per measured thing, one figure per run.
    func count(_ prepared: Prepared) async throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(runs)
        // The warm-up's first operations start work on other threads, which settles during a pause: a
        // session's deadline timer is a task that starts on a worker thread (Dispatch may spawn one) and
        // sleeps there; once per session, it would land in a counted run now and then. The task may resume
        // on another thread, whose caches the rest of the warm-up fills.
        for pass in 0..<2 {
            if pass == 1 { try await Task.sleep(for: settling) }
            for _ in 0..<warmup / 2 {
                try await prepared.baseline?()
                try await prepared.operation()
            }
        }
        for _ in 0..<runs {
            // The operation and its baseline alternate as in the warm-up: running one many times and then the
            // other changes how deep the task's allocator goes, and the first switch would take a new slab.
            var allocations: Int64 = 0
            for _ in 0..<iterations {
                allocations += try await Self.allocations(of: prepared.operation)
                if let baseline = prepared.baseline { allocations -= try await Self.allocations(of: baseline) }
            }
            samples.append(Double(allocations) / Double(iterations * prepared.perOperation))
        }
        return samples
    }

    /// Allocations made by every thread while `operation` runs.
    private static func allocations(of operation: @Sendable () async throws -> Void) async throws -> Int64 {
        let before = allocation_count()
        try await operation()
        return allocation_count() - before
    }
}

/// Counts every workload and prints its figure against its budget, off the main actor, so that no operation
/// hops to the main queue and back; returns how many passed and failed.
nonisolated func count(
    _ workloads: [Workload], with counter: Counter, verbose: Bool
) async -> (passed: Int, failed: Int) {
    let probe = allocationsOfThousandObjects()
    print("sanity: 1000 class instances: counted \(probe) allocations (at least 1000 expected)")
    guard probe >= 1_000 else {
        print("The counter does not see the Swift runtime's allocations: it counts on Linux with glibc, unsanitized.")
        return (0, 1)
    }
    var passed = 0
    var failed = 0
    for workload in workloads {
        do {
            let prepared = try await workload.prepare()
            let samples = try await counter.count(prepared)
            try await prepared.finish()
            let measured = median(samples)
            print("\(workload.name): measured \(formatted(measured)) allocations (budget \(workload.budget))")
            if verbose { print("    runs: " + samples.map(formatted).joined(separator: " ")) }
            if measured <= Double(workload.budget) {
                passed += 1
                if measured <= Double(workload.budget) - 1 {
                    print("    under budget: lower the budget in Workloads.swift to keep the gain")
                }
            } else {
                failed += 1
                print("    over budget: find the new allocation, or raise the budget in Workloads.swift, visibly")
            }
        } catch {
            failed += 1
            print("\(workload.name): failed: \(error)")
        }
    }
    return (passed, failed)
}

/// The median of some figures.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
}

/// A count as printed: whole numbers without decimals, others with up to three.
func formatted(_ value: Double) -> String {
    guard value != value.rounded() else { return String(Int(value)) }
    var text = String(format: "%.3f", value)
    while text.hasSuffix("0") { text.removeLast() }
    return text
}

/// Whether the counter sees the Swift runtime's allocations: `swift_allocObject` → `swift_slowAlloc` →
/// `malloc` from libswiftCore must reach this executable's `malloc`. Returns the count for 1,000 objects.
func allocationsOfThousandObjects() -> Int64 {
    final class Probe {
        let value: Int
        init(_ value: Int) { self.value = value }
    }
    var probes: [Probe] = []
    probes.reserveCapacity(1_000)
    let before = allocation_count()
    for index in 0..<1_000 { probes.append(Probe(index)) }
    let allocated = allocation_count() - before
    withExtendedLifetime(probes) {}
    return allocated
}
