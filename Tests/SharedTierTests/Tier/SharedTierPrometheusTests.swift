import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The tier's statistics in Prometheus' text format: `imgstore_shared_tier_*` families.
@Suite struct SharedTierPrometheusTests {
    static let promtool = LoopMount.tool("promtool")

    static func busy() -> SharedTier.Statistics {
        var statistics = SharedTier.Statistics()
        statistics.hits = 7
        statistics.absent = 3
        statistics.skipped = 2
        statistics.errors = ["timedOut": 4, "corruptBody": 1]
        statistics.uploadsStored = 5
        statistics.preconditionFailed = 6
        statistics.uploadsDropped = 1
        statistics.refreshes = 2
        statistics.queueDepth = 9
        statistics.breaker = .open(until: Date(timeIntervalSince1970: 1_800_000_000))
        return statistics
    }

    @Test func everyCounterErrorKindBreakerStateAndTheQueueDepthIsAFamily() {
        let lines = Set(Self.busy().prometheusExposition(labels: ["tier": "fleet"]).split(separator: "\n").map(String.init))
        for expected in [
            #"imgstore_shared_tier_hits_total{tier="fleet"} 7"#,
            #"imgstore_shared_tier_misses_total{tier="fleet"} 3"#,
            #"imgstore_shared_tier_skipped_total{tier="fleet"} 2"#,
            #"imgstore_shared_tier_puts_total{tier="fleet"} 5"#,
            #"imgstore_shared_tier_precondition_failed_total{tier="fleet"} 6"#,
            #"imgstore_shared_tier_uploads_dropped_total{tier="fleet"} 1"#,
            #"imgstore_shared_tier_refreshes_total{tier="fleet"} 2"#,
            #"imgstore_shared_tier_errors_total{kind="corruptBody",tier="fleet"} 1"#,
            #"imgstore_shared_tier_errors_total{kind="timedOut",tier="fleet"} 4"#,
            #"imgstore_shared_tier_queue_depth{tier="fleet"} 9"#,
            #"imgstore_shared_tier_breaker_state{state="closed",tier="fleet"} 0"#,
            #"imgstore_shared_tier_breaker_state{state="open",tier="fleet"} 1"#,
            #"imgstore_shared_tier_breaker_state{state="half_open",tier="fleet"} 0"#,
            "# TYPE imgstore_shared_tier_hits_total counter",
            "# TYPE imgstore_shared_tier_queue_depth gauge",
        ] {
            #expect(lines.contains(expected), "missing: \(expected)")
        }
    }

    @Test(.enabled(if: promtool != nil, "needs promtool on PATH (Debian package prometheus, Tools/install-deps.sh)"))
    func promtoolAcceptsTheTiersFamiliesBesideTheStoresAndTheLoaders() throws {
        var exposition = PrometheusExposition()
        var store = StoreMetrics()
        store.getsFromDisk = 3
        exposition.append(store, labels: ["store": "busy"])
        var loader = LoaderMetrics()
        loader.requests = 2
        exposition.append(loader, labels: ["store": "busy"])
        exposition.append(Self.busy(), labels: ["store": "busy"])
        exposition.appendSharedTierContents(objects: 10_000, bytes: 76_600_000, labels: ["store": "busy"])
        let fresh = SharedTier.Statistics()  // no errors yet: the errors family has no samples
        #expect(fresh.prometheusExposition().contains("# TYPE imgstore_shared_tier_errors_total counter"))
        let result = try ChildProcess.run(Self.promtool!, ["check", "metrics"], input: Data(exposition.text.utf8))
        #expect(result.status == 0, "promtool: \(result.standardError) \(result.output)")
        let alone = try ChildProcess.run(Self.promtool!, ["check", "metrics"], input: Data(fresh.prometheusExposition().utf8))
        #expect(alone.status == 0, "promtool: \(alone.standardError) \(alone.output)")
    }
}
