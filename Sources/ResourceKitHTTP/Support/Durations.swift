import Foundation

// The library's time arithmetic, in one place: the bound every wait and limit is clamped to, conversions that
// never trap, exponential backoff, and jitter named for what it does to a wait.

extension Duration {
    /// 10⁹ seconds, about 31 years: the longest wait the library computes and the longest limit it honours (a
    /// longer one means none, as `URLSession` reads such a timeout). `Duration` cannot hold every `Double`,
    /// and clocks trap adding a deadline much further away.
    package static let longest = Duration.seconds(1_000_000_000)
    /// ``longest`` in seconds.
    static let longestSeconds: Double = 1e9

    /// The duration in seconds, as a `Double`. Computed from the whole duration, not from `components`,
    /// whose whole seconds trap above `Int64.max` (a `.seconds(1e20)` is a valid `Duration`).
    var seconds: Double { self / .seconds(1) }

    /// The duration in whole nanoseconds, clamped to what 64 bits hold (292 years either way).
    @inlinable internal var clampedNanoseconds: Int64 {
        // `components` traps past `Int64.max` seconds: such a duration is past every nanosecond count anyway.
        if self >= .nanoseconds(Int64.max) { return .max }
        if self <= .nanoseconds(Int64.min) { return .min }
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflowAgain { return seconds < 0 ? .min : .max }
        return total
    }
}

/// Exponential backoff, for every wait that grows with failures in a row (retries, reconnections).
package enum Backoff {
    /// `initial × multiplier^exponent` in seconds, at most `ceiling` and ``Duration/longest``; `nil` for no wait.
    ///
    /// Never traps: a multiplier below 1 or NaN counts as 1, a negative exponent as zero, and a wait that is not
    /// positive, or NaN (`0 × ∞`), is no wait.
    package static func seconds(initial: Duration, multiplier: Double, exponent: Int, ceiling: Duration) -> Double? {
        let growth = multiplier.isNaN ? 1 : max(multiplier, 1)
        let seconds = min(
            initial.seconds * pow(growth, Double(max(exponent, 0))), ceiling.seconds, Duration.longestSeconds)
        return seconds > 0 ? seconds : nil
    }
}

extension RetryPolicy.Jitter {
    /// A draw of the source clamped to `0...1`: below zero (−∞ included) as zero, above one (+∞ included) as
    /// one, and NaN as one, so that a broken source of random numbers never makes retries come sooner.
    static func unit(_ draw: Double) -> Double {
        draw.isNaN ? 1 : min(max(draw, 0), 1)
    }

    /// "Full jitter": anywhere from zero to `seconds`, so that clients that failed together do not retry
    /// together. ``none`` waits `seconds`.
    func shortening(seconds: Double) -> Duration {
        .seconds(seconds * (source.map { Self.unit($0.draw()) } ?? 1))
    }

    /// `seconds` lengthened by up to one `parts`-th of itself (`parts: 2`, by up to half), never past
    /// ``Duration/longest``: a wait the server or the app asked for, which jitter must not shorten. ``none``
    /// waits `seconds`.
    package func lengthening(seconds: Double, byUpToOneIn parts: Double) -> Duration {
        let draw = source.map { Self.unit($0.draw()) } ?? 0
        return .seconds(min(seconds * (1 + draw / parts), Duration.longestSeconds))
    }
}
