// expect: libc-import
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func pid() -> Int32 { getpid() }
