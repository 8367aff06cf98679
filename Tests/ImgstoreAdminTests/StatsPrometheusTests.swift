import Foundation
import ImageStoreTestSupport
import Testing

/// `imgstore-admin stats --prometheus`: the store's gauges for node_exporter's textfile collector.
@Suite struct StatsPrometheusTests {
    @Test func printsTheStoresGaugesLabelledWithItsPath() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminBinary.makeDemoStore(store)
            let json = try AdminBinary.run(["stats", "--json", "--store", store])
            let facts = try #require(try JSONSerialization.jsonObject(with: json.standardOutput) as? [String: Any])
            let result = try AdminBinary.run(["stats", "--prometheus", "--store", store])
            #expect(result.status == 0)
            #expect(result.standardError == "")
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.contains("imgstore_entries{store=\"\(store)\"} \(facts["entryCount"] as? Int ?? -1)"))
            #expect(lines.contains("imgstore_logical_bytes{store=\"\(store)\"} \(facts["logicalBytes"] as? Int ?? -1)"))
            #expect(lines.contains("# TYPE imgstore_entries gauge"))
            #expect(!lines.contains { $0.contains("_total") }, "no counters of the admin process itself")
            #expect(result.output.hasSuffix("\n") && !result.output.hasSuffix("\n\n"))
        }
    }

    @Test(.enabled(if: Tools.find("promtool") != nil, "needs promtool on PATH (Debian package prometheus, Tools/install-deps.sh)"))
    func promtoolAcceptsIt() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.run(["stats", "--prometheus", "--store", store])
            let check = try ChildProcess.run(Tools.find("promtool")!, ["check", "metrics"], input: result.standardOutput)
            #expect(check.status == 0, "promtool: \(check.standardError) \(check.output)")
        }
    }

    @Test func refusesJSONAndPrometheusTogether() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.run(["stats", "--json", "--prometheus", "--store", store])
            #expect(result.status == 64)
            #expect(result.output == "")
            #expect(result.standardError.contains("--json and --prometheus cannot be used together"))
        }
    }
}
