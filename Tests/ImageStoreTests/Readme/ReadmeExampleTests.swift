import Foundation
import ImageStoreTestSupport
import Locking
import Testing

/// The README's examples compile and run: each ```swift block of README.md must appear, line by
/// line and in order, in `ReadmeExamples.swift` (which the compiler checks), and the usage
/// example runs against a temporary store.
@Suite struct ReadmeExampleTests {
    static let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let readme = here.appendingPathComponent("../../../README.md").standardized.path

    /// The Swift code blocks of the README.
    static func swiftBlocks() throws -> [[String]] {
        let lines = try String(contentsOfFile: readme, encoding: .utf8).components(separatedBy: "\n")
        var blocks: [[String]] = []
        var current: [String]?
        for line in lines {
            if line.hasPrefix("```swift") { current = []; continue }
            if line.hasPrefix("```"), let block = current { blocks.append(block); current = nil; continue }
            current?.append(line)
        }
        return blocks
    }

    /// The files that compile the README's blocks: this suite's, the observability section's
    /// (`SnippetTests`), and the shared tier's (in its own test target, which links `SharedTier`).
    static let compiledExamples = [
        "ReadmeExamples.swift", "../Observability/SnippetTests.swift", "../../SharedTierTests/Tier/ReadmeExample.swift",
    ]

    @Test func everySwiftBlockOfTheReadmeIsInTheCompiledExamples() throws {
        let files = try Self.compiledExamples.map { name in
            try String(contentsOf: Self.here.appendingPathComponent(name), encoding: .utf8)
                .components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let blocks = try Self.swiftBlocks()
        #expect(blocks.count >= 2, "the README's usage and loader examples")
        for block in blocks {
            let lines = block.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            // Each block is compiled whole, in order, in one of the files.
            let compiled = files.contains { examples in
                var from = 0
                for line in lines {
                    guard let at = examples[from...].firstIndex(of: line) else { return false }
                    from = at + 1
                }
                return true
            }
            #expect(compiled, "README block not compiled (in order) in any of \(Self.compiledExamples): \(lines.first ?? "")")
        }
    }

    @Test func theConfigurationExampleOpensAStore() throws {
        try withTemporaryStore(readmeConfiguration()) { store in
            #expect(store.configuration.sweepPeriod == .seconds(30))
        }
    }

    @Test func theUsageExampleRuns() async throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = try Fixtures.image("photo-baseline.jpg")
        let served = LockedValue<[String?]>([])
        try await readmeUsage(downloadedBytes: bytes, imagesDirectory: directory + "/images") { data, type in
            #expect(data == bytes)
            served.withLock { $0.append(type) }
        }
        #expect(served.withLock { $0 } == ["image/jpeg"])
    }
}
