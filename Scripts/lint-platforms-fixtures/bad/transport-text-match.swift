// expect: transport-text
import Foundation

func isSlow(_ error: any Error) -> Bool { error.localizedDescription.hasPrefix(slowText) }
let slowText = "the request was slow"
