import Foundation
import ImageStoreTestSupport
import Testing

/// Success lines that echo a path the user gave escape control characters, as error messages
/// do, so each stays one line (a script reading the output line by line sees one line).
@Suite struct SuccessLineEscapingTests {
    @Test func exportsSuccessLineEscapesTheDirectory() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let target = directory + "/out\nx\u{1B}"
            let result = try AdminBinary.run(["--store", store, "export", target])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output == "exported 7 entries to \(directory)/out\\nx\\u{1B}/manifest.json\n")
            #expect(FileManager.default.fileExists(atPath: target + "/manifest.json"), "the directory itself has the name given")
        }
    }

    @Test func demosStoreLineEscapesTheStorePath() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/demo\nx\t"
            let result = try AdminBinary.run(["--store", store, "demo", "--fixtures", Fixtures.directory])
            #expect(result.status == 0, "\(result.standardError)")
            let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first == "store: \(directory)/demo\\nx\\t")
            #expect(lines.filter { $0.hasPrefix("  put+get ok") }.count == 7, "\(result.output)")
        }
    }
}
