// expect: int-width-max
// 292 years on a 64-bit Int, 2 seconds on a 32-bit one.
let longestRetryAfter = Duration.seconds(Int.max / 1_000_000_000)
