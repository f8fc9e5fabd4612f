// expect: full-fsync
// Durable on Linux; on Darwin the batch can still sit in the drive's cache when the power goes.
func commit(_ descriptor: Int32) -> Bool {
    fsync(descriptor) == 0
}
