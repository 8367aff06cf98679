import Foundation
import ImageStoreTestSupport
import Testing

/// `stats --prometheus` reports the store directory's real disk use, as text and `--json` do
/// (probe14 #17).
@Suite struct StatsDiskBytesGaugeTests {
    /// Failed before: the only size gauge was imgstore_file_bytes (data.mdb, 45 KB for a small
    /// store) while the directory took 68 MB with its log segments; there was no gauge for that.
    @Test func thePrometheusOutputHasTheDirectorysDiskUse() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            try AdminBinary.makeDemoStore(store)
            let json = try AdminBinary.run(["stats", "--json", "--store", store])
            let facts = try #require(try JSONSerialization.jsonObject(with: json.standardOutput) as? [String: Any])
            let diskBytes = try #require(facts["diskBytes"] as? Int)
            let dataFileBytes = try #require(facts["dataFileBytes"] as? Int)
            #expect(diskBytes > dataFileBytes, "the log segments count too")
            let result = try AdminBinary.run(["stats", "--prometheus", "--store", store])
            #expect(result.status == 0)
            #expect(result.standardError == "")
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.contains("# HELP imgstore_disk_bytes Disk space allocated to every file of the store directory (data.mdb, lock.mdb, log segments, spare ones included)."))
            #expect(lines.contains("# TYPE imgstore_disk_bytes gauge"))
            #expect(lines.contains("imgstore_disk_bytes{store=\"\(store)\"} \(diskBytes)"), "\(result.output)")
            #expect(lines.contains("imgstore_file_bytes{store=\"\(store)\"} \(dataFileBytes)"), "\(result.output)")
        }
    }

    /// The new family passes `promtool check metrics` (the whole output, as StatsPrometheusTests
    /// checks it), and its label is escaped like the others'.
    @Test(.enabled(if: Tools.find("promtool") != nil, "needs promtool on PATH (Debian package prometheus, Tools/install-deps.sh)"))
    func promtoolAcceptsTheDiskGaugeWithAnEscapedLabel() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/a\"b\nc"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.run(["stats", "--prometheus", "--store", store])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output.contains("imgstore_disk_bytes{store=\"\(directory)/a\\\"b\\nc\"} "), "\(result.output)")
            let check = try ChildProcess.run(Tools.find("promtool")!, ["check", "metrics"], input: result.standardOutput)
            #expect(check.status == 0, "promtool: \(check.standardError) \(check.output)")
        }
    }
}
