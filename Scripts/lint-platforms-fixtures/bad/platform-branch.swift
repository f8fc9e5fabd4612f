// expect: platform-branch
func cacheLimit() -> Int {
    #if os(Linux)
        return 0
    #else
        return 4 << 20
    #endif
}
