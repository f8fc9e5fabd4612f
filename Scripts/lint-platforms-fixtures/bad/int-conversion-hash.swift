// expect: int-conversion
// With a 32-bit hash the high 64-bit word of hash * size is always 0: every id lands in slot 0.
func slot(of hash: Int, size: Int) -> Int {
    Int(truncatingIfNeeded: UInt64(UInt(bitPattern: hash)).multipliedFullWidth(by: UInt64(size)).high)
}
