// expect: transport-text
import Foundation

// libcurl's words: CFNetwork reports the same cut body as networkConnectionLost, without them.
func isTruncated(_ error: URLError) -> Bool {
    error.localizedDescription.contains("transfer closed with")
}
