import Foundation

/// Prometheus' text exposition format (version 0.0.4), for `StoreMetrics` and `LoaderMetrics`:
/// every family with HELP and TYPE lines, names prefixed `imgstore_`, counters ending in
/// `_total`, sizes in `_bytes` and durations in `_seconds`, histograms as `_bucket{le=…}`,
/// `_sum` and `_count`.
///
/// Serve it from a `/metrics` handler, or write it to a file for node_exporter's textfile
/// collector (`imgstore-admin stats --prometheus`). Each store or loader of a process needs
/// its own `labels` (say `store="thumbnails"`) when several are exported together.
public struct PrometheusExposition: Sendable {
    /// The text so far.
    public private(set) var text = ""
    /// Whether only the store's own gauges are appended (`Scope.storeGauges`).
    private var storeOnly = false

    /// Which of a store's metrics to export.
    public enum Scope: Sendable {
        /// Everything: what a service exports about the store it runs.
        case all
        /// Only the gauges that describe the store on disk (entries, logical and file bytes), none
        /// of this process's counters, memory tier or log: for a tool that opens the store just to read them, as
        /// `imgstore-admin stats --prometheus` does for node_exporter's textfile collector.
        case storeGauges
    }

    public init() {}

    /// Adds a store's metrics, with `labels` on every sample.
    public mutating func append(_ metrics: StoreMetrics, labels: [String: String] = [:], scope: Scope = .all) {
        storeOnly = scope == .storeGauges
        defer { storeOnly = false }
        let m = metrics
        family("gets_total", .counter, "Gets that returned an entry, by where it was found.", labels,
               [(["source": "log"], Double(m.getsFromLog)), (["source": "memory"], Double(m.getsFromMemory)),
                (["source": "disk"], Double(m.getsFromDisk))])
        counter("misses_total", "Gets that found no (fresh) entry.", labels, m.misses)
        counter("stale_reads_total", "Gets allowing stale entries that returned an expired one.", labels, m.staleReads)
        counter("corrupt_reads_total", "Reads refused because the bytes did not match their checksum.", labels, m.corruptReads)
        counter("puts_total", "Successful puts.", labels, m.puts)
        counter("removes_total", "Removes that removed an entry.", labels, m.removes)
        family("validation_rejections_total", .counter, "Puts refused by the image validator, by reason.", labels,
               m.validationRejections.sorted { $0.key < $1.key }.map { (["reason": $0.key], Double($0.value)) })
        family("evictions_total", .counter, "Entries evicted, by reason (memory: from the memory tier only).", labels,
               StoreEvent.EvictionReason.allCases.map { (["reason": $0.rawValue], Double(m.evictions[$0] ?? 0)) })
        gauge("entries", "Entries in the store, expired ones not yet swept included.", labels, Double(m.entries))
        gauge("logical_bytes", "Sum of the entries' image sizes.", labels, Double(m.logicalBytes))
        gauge("file_bytes", "Disk space allocated to data.mdb.", labels, Double(m.fileBytes))
        guard !storeOnly else { return }
        gauge("memory_entries", "Entries in the memory tier.", labels, Double(m.memoryEntries))
        gauge("memory_bytes", "Image bytes in the memory tier.", labels, Double(m.memoryBytes))
        gauge("log_segments", "Write-ahead log segments not yet retired.", labels, Double(m.logSegments))
        gauge("log_bytes", "Bytes in the write-ahead log segments not yet retired (closed ones counted at their size limit).",
              labels, Double(m.logBytes))
        gauge("log_unapplied_records", "Logged records not yet applied to LMDB.", labels, Double(m.unappliedRecords))
        gauge("log_unapplied_bytes", "Memory held by logged records not yet applied to LMDB.", labels, Double(m.unappliedBytes))
        gauge("log_applier_lag_seconds", "Age of the oldest written record the applier has not applied.", labels,
              m.applierLag.seconds)
        histogram("log_group_commit_records", "Records written per group-commit batch.", labels, m.groupCommitBatchRecords)
        histogram("log_fsync_seconds", "Duration of each write-ahead log fsync.", labels, m.logFsyncSeconds)
        counter("checkpoints_total", "Checkpoints that retired log segments.", labels, m.checkpoints)
        counter("checkpoint_failures_total", "Checkpoints that failed.", labels, m.checkpointFailures)
        family("background_failures_total", .counter, "Background work that failed, by task (each also went to the event handler).",
               labels, StoreEvent.BackgroundTask.allCases.map { (["task": $0.rawValue], Double(m.backgroundFailures[$0] ?? 0)) })
        gauge("last_background_failure_timestamp_seconds", "When the last background failure happened (0: none).", labels,
              m.lastBackgroundFailure.map { $0.at.timeIntervalSince1970 } ?? 0)
    }

    /// Adds the disk space every file of a store directory takes (`imgstore_disk_bytes`):
    /// data.mdb, lock.mdb, the log segments (spare ones included), as `du` counts it. Measured
    /// by listing the directory, which `StoreMetrics` (kept without I/O) never does, so the
    /// caller passes it: `imgstore-admin stats --prometheus`, beside the store's gauges.
    package mutating func appendStoreDiskBytes(_ bytes: Int, labels: [String: String] = [:]) {
        gauge("disk_bytes", "Disk space allocated to every file of the store directory (data.mdb, lock.mdb, log segments, spare ones included).",
              labels, Double(bytes))
    }

    /// Adds a loader's metrics, with `labels` on every sample.
    public mutating func append(_ metrics: LoaderMetrics, labels: [String: String] = [:]) {
        let m = metrics
        counter("loader_requests_total", "Requests sent to origins, conditional ones included.", labels, m.requests)
        counter("loader_shared_downloads_total", "Loads that shared a download another load had started.", labels, m.sharedDownloads)
        counter("loader_not_modified_total", "Requests answered 304 Not Modified.", labels, m.notModified)
        counter("loader_stale_served_total", "Loads answered with a stale entry because the origin failed.", labels, m.staleServed)
        counter("loader_negative_cache_hits_total", "Loads answered from the negative cache without a request.", labels,
                m.negativeCacheHits)
        family("loader_failures_total", .counter, "Downloads that failed, by reason.", labels,
               m.failures.sorted { $0.key < $1.key }.map { (["reason": $0.key], Double($0.value)) })
        counter("loader_downloaded_bytes_total", "Body bytes received from origins.", labels, m.bytesDownloaded)
        counter("loader_shared_tier_hits_total", "Loads answered by the shared tier without the origin.", labels, m.sharedTierHits)
        counter("loader_shared_tier_misses_total", "Shared-tier lookups that gave nothing usable.", labels, m.sharedTierMisses)
        counter("loader_shared_tier_invalid_total", "Shared-tier entries the validator refused.", labels, m.sharedTierInvalid)
        counter("loader_shared_tier_offers_total", "Origin downloads offered to the shared tier.", labels, m.sharedTierOffers)
        counter("loader_shared_tier_refreshes_total", "304 answers that refreshed a shared-tier entry.", labels,
                m.sharedTierRefreshes)
    }

    // MARK: - Families

    package enum Kind: String { case counter, gauge, histogram }

    package mutating func counter(_ name: String, _ help: String, _ labels: [String: String], _ value: Int) {
        family(name, .counter, help, labels, [([:], Double(value))])
    }

    package mutating func gauge(_ name: String, _ help: String, _ labels: [String: String], _ value: Double) {
        family(name, .gauge, help, labels, [([:], value)])
    }

    /// A family's HELP and TYPE lines and its samples (none: the lines alone, which is valid).
    package mutating func family(_ name: String, _ kind: Kind, _ help: String, _ labels: [String: String],
                                 _ samples: [([String: String], Double)]) {
        guard kind == .gauge || !storeOnly else { return }
        header(name, kind, help)
        for (own, value) in samples { sample("imgstore_" + name, labels.merging(own) { _, new in new }, value) }
    }

    private mutating func histogram(_ name: String, _ help: String, _ labels: [String: String], _ histogram: HistogramSnapshot) {
        guard !storeOnly else { return }
        header(name, .histogram, help)
        let full = "imgstore_" + name
        for bucket in histogram.buckets {
            sample(full + "_bucket", labels.merging(["le": Self.number(bucket.upperBound)]) { _, new in new }, Double(bucket.count))
        }
        sample(full + "_bucket", labels.merging(["le": "+Inf"]) { _, new in new }, Double(histogram.count))
        sample(full + "_sum", labels, histogram.sum)
        sample(full + "_count", labels, Double(histogram.count))
    }

    private mutating func header(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP imgstore_\(name) \(Self.escaped(help, quote: false))\n# TYPE imgstore_\(name) \(kind.rawValue)\n"
    }

    private mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escaped($0.value, quote: true))\"" }
                .joined(separator: ",") + "}"
        }
        text += " " + Self.number(value) + "\n"
    }

    /// A sample value: integers without a fraction, others in Swift's shortest round-trip form.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Escapes `\`, newlines and (in label values) `"`, as the format requires.
    static func escaped(_ text: String, quote: Bool) -> String {
        var out = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        if quote { out = out.replacingOccurrences(of: "\"", with: "\\\"") }
        return out
    }
}

extension StoreMetrics {
    /// These metrics in Prometheus' text format (see `PrometheusExposition`).
    public func prometheusExposition(labels: [String: String] = [:], scope: PrometheusExposition.Scope = .all) -> String {
        var exposition = PrometheusExposition()
        exposition.append(self, labels: labels, scope: scope)
        return exposition.text
    }
}

extension LoaderMetrics {
    /// These metrics in Prometheus' text format (see `PrometheusExposition`).
    public func prometheusExposition(labels: [String: String] = [:]) -> String {
        var exposition = PrometheusExposition()
        exposition.append(self, labels: labels)
        return exposition.text
    }
}
