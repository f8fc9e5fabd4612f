extension String {
    /// The text on one line: each line break (CR, LF, CR LF and the other Unicode newlines) becomes a space,
    /// so that a server's body or message quoted in a description cannot split a log line. Free for text that
    /// has none.
    var singleLine: String {
        guard contains(where: \.isNewline) else { return self }
        return String(map { $0.isNewline ? " " : $0 })
    }
}
