import Foundation
import Testing

/// Every Swift block of README.md (except the Package.swift excerpt) stands verbatim in a `Snippet*.swift`
/// file of this target, which the build compiles, so the README cannot show code that does not compile.
@Suite struct ReadmeTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    @Test func everyReadmeSnippetIsCompiled() throws {
        let readme = try String(
            contentsOf: Self.directory.appendingPathComponent("../../README.md").standardized, encoding: .utf8)
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }
        let snippets = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasPrefix("Snippet") }
            .map { try String(contentsOf: Self.directory.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
        let checked = blocks.filter { !$0.hasPrefix("// Package.swift") }
        #expect(checked.count >= 5)
        for block in checked {
            #expect(snippets.contains(block), "README block not compiled by a snippet file:\n\(block)")
        }
    }
}
