import Foundation
import HeapUsage

/// One measured quantity of one variant: a sample per round.
struct Measurement: Codable, Sendable {
    var workload: String
    var variant: String
    var unit: String
    var samples: [Double]

    var median: Double {
        let sorted = samples.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }
    var min: Double { samples.min() ?? .nan }
    var max: Double { samples.max() ?? .nan }
}

/// A ratio of two medians measured in the same run, with what it means.
struct Ratio: Codable, Sendable {
    var workload: String
    var ratio: Double
    var meaning: String
}

/// The results of one run, or of one workload.
struct Report: Sendable {
    var measurements: [Measurement] = []
    var ratios: [Ratio] = []
    var notes: [String] = []

    mutating func add(_ measurement: Measurement) { measurements.append(measurement) }

    mutating func merge(_ other: Report) {
        measurements += other.measurements
        ratios += other.ratios
        notes += other.notes
    }

    /// Adds `candidate / baseline` of the medians.
    mutating func compare(_ workload: String, _ candidate: Measurement, over baseline: Measurement, meaning: String) {
        ratios.append(Ratio(workload: workload, ratio: candidate.median / baseline.median, meaning: meaning))
    }

    /// The median of the ratios of samples taken side by side (round `i` of `candidate` over round `i` of
    /// `baseline`, from `interleaved`): a slow spell of a shared machine that spans a pair cancels out, where a
    /// ratio of medians keeps it.
    mutating func comparePaired(
        _ workload: String, _ candidate: Measurement, over baseline: Measurement, meaning: String
    ) {
        let pairs = zip(candidate.samples, baseline.samples).map { $0 / $1 }
        let ratio = Measurement(workload: workload, variant: "", unit: "", samples: pairs).median
        ratios.append(Ratio(workload: workload, ratio: ratio, meaning: meaning))
    }

    func printTable() {
        print("")
        print(
            pad("workload", 46) + pad("variant", 22) + lpad("median", 12) + lpad("min", 12) + lpad("max", 12) + "  unit"
        )
        print(String(repeating: "-", count: 118))
        for m in measurements {
            print(
                pad(m.workload, 46) + pad(m.variant, 22) + lpad(format(m.median), 12) + lpad(format(m.min), 12)
                    + lpad(format(m.max), 12) + "  " + m.unit)
        }
        print("")
        print(pad("ratio", 64) + lpad("value", 10) + "  meaning")
        print(String(repeating: "-", count: 118))
        for r in ratios {
            print(pad(r.workload, 64) + lpad(String(format: "%.3f", r.ratio), 10) + "  " + r.meaning)
        }
        for note in notes { print("note: \(note)") }
    }

    func writeJSON(to path: String, configuration: [String: String]) throws {
        struct Output: Encodable {
            var configuration: [String: String]
            var measurements: [Entry]
            var ratios: [Ratio]
            var notes: [String]
        }
        struct Entry: Encodable {
            var workload, variant, unit: String
            var median, min, max: Double
            var samples: [Double]
        }
        let output = Output(
            configuration: configuration,
            measurements: measurements.map {
                Entry(
                    workload: $0.workload, variant: $0.variant, unit: $0.unit, median: $0.median, min: $0.min,
                    max: $0.max, samples: $0.samples)
            },
            ratios: ratios, notes: notes)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(output).write(to: URL(fileURLWithPath: path))
    }

    private func format(_ value: Double) -> String {
        if value.isNaN { return "-" }
        if abs(value) >= 100 { return String(format: "%.0f", value) }
        if abs(value) >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.4f", value)
    }
    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width
            ? String(text.prefix(width - 1)) + " " : text + String(repeating: " ", count: width - text.count)
    }
    private func lpad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

/// Runs variants after a warm-up, interleaving their rounds (A B A B …) so drift hits all of them alike.
func interleaved(
    workload: String, unit: String, rounds: Int, warmup: Int,
    _ variants: [(String, @Sendable () async throws -> Double)]
) async throws -> [Measurement] {
    for _ in 0..<warmup {
        for (_, body) in variants { _ = try await body() }
    }
    var samples = Array(repeating: [Double](), count: variants.count)
    for _ in 0..<rounds {
        for (index, (_, body)) in variants.enumerated() {
            samples[index].append(try await body())
        }
    }
    return zip(variants, samples).map { Measurement(workload: workload, variant: $0.0, unit: unit, samples: $1) }
}

/// Wall-clock seconds of `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// This process's resource usage so far.
private func processUsage() -> rusage { Platform.resourceUsage() }

/// User plus system CPU seconds of this process so far.
func cpuSeconds() -> Double {
    let usage = processUsage()
    func value(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return value(usage.ru_utime) + value(usage.ru_stime)
}

/// How many times this process's threads have waited for something (a lock, a wake-up, I/O) so far: the
/// voluntary context switches of `getrusage`. Per request, it counts the hand-offs between threads a request
/// takes.
func voluntaryContextSwitches() -> Double { Double(processUsage().ru_nvcsw) }

/// Bytes allocated from the heap now (glibc's mallinfo2), or nil where that is not available. Unlike the
/// resident set size, it goes down when memory is freed, so deltas measure what a workload holds.
func heapBytes() -> Double? {
    let bytes = heap_bytes_in_use()
    return bytes == 0 ? nil : Double(bytes)
}
