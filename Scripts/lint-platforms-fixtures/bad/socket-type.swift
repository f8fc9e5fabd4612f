// expect: socket-type
// Compiles on Glibc only: on Darwin SOCK_STREAM is an Int32, which has no `.rawValue`.
func listen() -> Int32 {
    socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
}
