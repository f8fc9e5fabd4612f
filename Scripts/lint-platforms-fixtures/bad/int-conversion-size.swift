// expect: int-conversion
// Traps for a file of 2 GiB or more where Int is 32 bits.
func size(of info: stat) -> Int { Int(info.st_size) }
