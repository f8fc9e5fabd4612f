// expect: argv0
import Foundation

let child = URL(fileURLWithPath: CommandLine.arguments[0])
