// expect: libc-import
// No Glibc on Darwin: this file compiles on Linux only.
import Glibc

func pid() -> Int32 { getpid() }
