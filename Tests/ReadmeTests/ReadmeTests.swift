import Foundation
import Testing

/// Every Swift block of README.md (except the Package.swift excerpt) and of the DocC articles stands verbatim
/// in a Swift file of this target (`Snippet*.swift` for the README, `Article*.swift` for the articles), which
/// the build compiles, so the documentation cannot show code that does not compile.
@Suite struct ReadmeTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let root = directory.appendingPathComponent("../..").standardized

    /// README.md and every article of the DocC catalogs, relative to the package's root.
    static let documents: [String] = {
        let sources = root.appendingPathComponent("Sources")
        let modules = (try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? []
        let articles = modules.sorted().flatMap { module -> [String] in
            let catalog = "Sources/\(module)/\(module).docc"
            let files =
                (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path))
            return (files ?? []).filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return ["README.md"] + articles
    }()

    /// The Swift blocks of a Markdown document.
    static func swiftBlocks(of document: String) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
        return text.components(separatedBy: "```swift\n").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }.filter { !$0.hasPrefix("// Package.swift") }
    }

    static let compiled: String = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".swift") && $0 != "ReadmeTests.swift" }.sorted()
            .compactMap { try? String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
    }()

    @Test func theDocumentsAreFound() throws {
        #expect(Self.documents.count >= 10, "\(Self.documents)")
        #expect(Self.documents.contains("Sources/ResourceKit/ResourceKit.docc/GettingStarted.md"))
        #expect(Self.documents.contains("Sources/ResourceKitTesting/ResourceKitTesting.docc/TestingYourApp.md"))
        #expect(try Self.swiftBlocks(of: "README.md").count >= 2)
        #expect(try Self.documents.map(Self.swiftBlocks).joined().count >= 30)
    }

    /// The README introduces; the articles document. Its length has a budget, as the public surface does: 300
    /// lines, which a change may not pass without moving what it adds to the article it belongs to.
    @Test func theReadmeStaysWithinItsBudget() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
        #expect(lines <= 300, "README.md has \(lines) lines; its budget is 300")
        #expect(lines > 50, "README.md has \(lines) lines: is it the README?")
    }

    @Test(arguments: documents) func everyCodeBlockIsCompiled(_ document: String) throws {
        for block in try Self.swiftBlocks(of: document) {
            #expect(
                Self.compiled.contains(block), "\(document): block not compiled by a file of ReadmeTests:\n\(block)")
        }
    }
}
