/// Numbers and durations that break arithmetic written carelessly (NaN, infinities, extremes), mixed with ordinary
/// ones: what the tests of every growing wait (retries, reconnections) draw their policies from.
package enum HostileWaits {
    package static let doubles: [Double] = [0, -1, 0.5, 1, 2, 10, .nan, .infinity, -.infinity, 1e300, -1e-300]
    package static let durations: [Duration] = [
        .zero, .milliseconds(1), .seconds(3), .seconds(-5), .seconds(1e12), .seconds(Int64.max), .seconds(Int64.min),
    ]

    /// A hostile double one time in three, else an ordinary one.
    package static func double(_ generator: inout SeededGenerator) -> Double {
        Int.random(in: 0..<3, using: &generator) == 0
            ? doubles.randomElement(using: &generator)!
            : Double.random(in: -2..<20, using: &generator)
    }

    /// A hostile duration one time in three, else an ordinary one.
    package static func duration(_ generator: inout SeededGenerator) -> Duration {
        Int.random(in: 0..<3, using: &generator) == 0
            ? durations.randomElement(using: &generator)!
            : .milliseconds(Int64.random(in: -1_000...600_000, using: &generator))
    }

    /// A draw of a jitter's source clamped as the library clamps it: NaN as one.
    package static func unit(_ draw: Double) -> Double { draw.isNaN ? 1 : min(max(draw, 0), 1) }

    /// A duration in seconds, computed from the whole duration.
    package static func seconds(_ duration: Duration) -> Double { duration / .seconds(1) }
}
