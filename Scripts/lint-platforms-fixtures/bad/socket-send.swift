// expect: socket-send
// On Darwin, a peer that closed first kills the process with SIGPIPE.
func reply(_ client: Int32, _ bytes: [UInt8]) -> Int {
    bytes.withUnsafeBytes { sendAll(client, $0.baseAddress, $0.count, 0) }
}

func sendAll(_ descriptor: Int32, _ base: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(descriptor, base, count, flags)
}
