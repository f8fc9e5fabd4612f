// expect: int-conversion
func milliseconds(_ duration: Duration) -> Int { Int(duration.components.attoseconds / 1_000_000_000_000_000) }
