// expect: stream-subclass
import Foundation

final class BodyStream: InputStream {
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int { 0 }
}
