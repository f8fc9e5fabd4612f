// expect: platform-branch
// A `// platforms:` comment with no reason after the colon exempts nothing.
func cacheLimit() -> Int {
    // platforms:
    #if canImport(FoundationNetworking)
        return 0
    #else
        return 4 << 20
    #endif
}
