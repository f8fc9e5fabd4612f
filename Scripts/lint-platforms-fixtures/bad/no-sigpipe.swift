// expect: no-sigpipe
// The flag the tests' servers pass on Linux only, falling back to 0 (SIGPIPE) elsewhere.
let sendFlags = Int32(MSG_NOSIGNAL)
