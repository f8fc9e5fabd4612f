// expect: libc-symbol
import Foundation

// There is no /proc on Darwin.
let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
