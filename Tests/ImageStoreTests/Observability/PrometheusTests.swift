import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// The Prometheus text exposition of store and loader metrics.
@Suite struct PrometheusTests {
    static let promtool = LoopMount.tool("promtool")

    // MARK: - Format

    @Test func familiesHaveHelpTypeAndPrefixedNames() {
        var metrics = StoreMetrics()
        metrics.getsFromMemory = 3
        metrics.validationRejections = ["truncated": 2]
        let text = metrics.prometheusExposition(labels: ["store": "a \"quoted\\ name"])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains(#"imgstore_gets_total{source="memory",store="a \"quoted\\ name"} 3"#))
        #expect(lines.contains(#"imgstore_validation_rejections_total{reason="truncated",store="a \"quoted\\ name"} 2"#))
        let names = Set(lines.filter { !$0.hasPrefix("#") }.map { String($0.prefix { $0 != "{" && $0 != " " }) })
        #expect(names.allSatisfy { $0.hasPrefix("imgstore_") })
        for family in lines.filter({ $0.hasPrefix("# TYPE ") }).map({ $0.split(separator: " ")[2] }) {
            #expect(lines.contains { $0.hasPrefix("# HELP \(family) ") }, "\(family) has HELP")
        }
        for line in lines where line.hasPrefix("# TYPE ") && line.hasSuffix(" counter") {
            #expect(line.split(separator: " ")[2].hasSuffix("_total"))
        }
    }

    @Test func histogramsHaveCumulativeBucketsSumAndCount() {
        var metrics = StoreMetrics()
        metrics.logFsyncSeconds = HistogramSnapshot(
            buckets: [.init(upperBound: 0.001, count: 2), .init(upperBound: 0.01, count: 5)], count: 6, sum: 1.5)
        let lines = metrics.prometheusExposition().split(separator: "\n").map(String.init)
        #expect(lines.contains("# TYPE imgstore_log_fsync_seconds histogram"))
        #expect(lines.contains(#"imgstore_log_fsync_seconds_bucket{le="0.001"} 2"#))
        #expect(lines.contains(#"imgstore_log_fsync_seconds_bucket{le="0.01"} 5"#))
        #expect(lines.contains(#"imgstore_log_fsync_seconds_bucket{le="+Inf"} 6"#))
        #expect(lines.contains("imgstore_log_fsync_seconds_sum 1.5"))
        #expect(lines.contains("imgstore_log_fsync_seconds_count 6"))
    }

    // MARK: - promtool

    @Test(.enabled(if: promtool != nil, "needs promtool on PATH (Debian package prometheus, Tools/install-deps.sh)"))
    func promtoolAcceptsTheExpositionOfABusyStore() throws {
        let clock = ManualClock()
        var configuration = makeConfiguration(validation: .rejectInvalid, clock: clock)
        configuration.logSegmentBytes = 64 << 10
        try withTemporaryStore(configuration) { store in
            let png = try Fixtures.image("shapes.png")
            for n in 0..<40 { try store.put(png, for: "https://x.test/\(n)", expiry: .after(.seconds(n < 10 ? 5 : 3600))) }
            for n in 0..<60 { _ = try store.get("https://x.test/\(n)") }
            #expect(throws: ImageStoreError.self) { try store.put(Data("junk".utf8), for: "https://x.test/junk") }
            clock.advance(by: 6)
            _ = try store.get("https://x.test/1", allowingStale: true)
            try store.sweepExpired()
            try store.remove("https://x.test/20")
            try store.checkpoint()
            var loader = LoaderMetrics()
            loader.requests = 5
            loader.failures = ["http_4xx": 1, "timed_out": 2]
            var exposition = PrometheusExposition()
            exposition.append(store.metrics, labels: ["store": "busy"])
            exposition.append(loader, labels: ["store": "busy"])
            #expect(exposition.text.contains("imgstore_entries{store=\"busy\"} 29"))
            let result = try ChildProcess.run(Self.promtool!, ["check", "metrics"], input: Data(exposition.text.utf8))
            #expect(result.status == 0, "promtool: \(result.standardError) \(result.output)")
        }
    }
}
