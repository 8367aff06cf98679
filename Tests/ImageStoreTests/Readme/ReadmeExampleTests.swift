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

    @Test func everySwiftBlockOfTheReadmeIsInTheCompiledExamples() throws {
        let examples = try String(contentsOf: Self.here.appendingPathComponent("ReadmeExamples.swift"), encoding: .utf8)
            .components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let blocks = try Self.swiftBlocks()
        #expect(blocks.count >= 2, "the README's usage and loader examples")
        for block in blocks {
            var from = 0
            for line in block.map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty {
                guard let at = examples[from...].firstIndex(of: line) else {
                    Issue.record("README line not in ReadmeExamples.swift (in order): \(line)")
                    break
                }
                from = at + 1
            }
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
