// swift run -c release AllocationBudgets [--verbose] [--runs N] [--iterations N] [--only TEXT]
//
// Counts the heap allocations of one operation of each workload (every malloc, calloc, realloc,
// posix_memalign and aligned_alloc of the process, see Benchmarks/AllocationCounter) and fails when one
// makes more than its budget. Each workload warms up, then counts `runs` × `iterations` operations; its
// figure is the median of the runs' allocations per operation. Scripts/test runs it in release.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let verbose = arguments.contains("--verbose")
var counter = Counter()
counter.runs = option("--runs").flatMap(Int.init) ?? counter.runs
counter.iterations = option("--iterations").flatMap(Int.init) ?? counter.iterations
// For profiling one workload: those whose name contains the text.
let selected = option("--only").map { only in workloads.filter { $0.name.contains(only) } } ?? workloads

#if DEBUG
    print("note: a debug build; the budgets are for release (swift run -c release AllocationBudgets)")
#endif

let (passed, failed) = await count(selected, with: counter, verbose: verbose)
print("\(passed) passed, \(failed) failed")
exit(failed == 0 ? 0 : 1)
