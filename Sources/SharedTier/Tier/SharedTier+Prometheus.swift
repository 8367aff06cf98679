import Foundation
import ImageStore

extension PrometheusExposition {
    /// Adds a shared tier's statistics (`SharedTier.statistics`), with `labels` on every
    /// sample: every family is named `imgstore_shared_tier_…`.
    ///
    /// Lookups are `hits_total` and `misses_total` (no object); requests the open breaker
    /// skipped are `skipped_total`; every failed request (lookup, upload, refresh; a corrupt
    /// object included) is in `errors_total` by kind. Writes are `puts_total` (objects stored),
    /// `precondition_failed_total` (412: another host won the race, not an error),
    /// `uploads_dropped_total` and `refreshes_total`. The breaker's state is one gauge per state,
    /// 1 for the current one.
    public mutating func append(_ statistics: SharedTier.Statistics, labels: [String: String] = [:]) {
        let s = statistics
        counter("shared_tier_hits_total", "Shared tier lookups that returned an entry.", labels, s.hits)
        counter("shared_tier_misses_total",
                "Shared tier lookups that found no object (failed ones are in errors_total, skipped ones in skipped_total).",
                labels, s.absent)
        counter("shared_tier_skipped_total", "Shared tier lookups and uploads skipped because the breaker was open.",
                labels, s.skipped)
        counter("shared_tier_puts_total", "Objects written to the shared tier (created or replaced).", labels, s.uploadsStored)
        counter("shared_tier_precondition_failed_total",
                "Shared tier writes that lost the race to another host (HTTP 412; not errors).", labels, s.preconditionFailed)
        counter("shared_tier_uploads_dropped_total", "Uploads dropped: the queue was full, or the metadata over 2 KB.",
                labels, s.uploadsDropped)
        counter("shared_tier_refreshes_total", "Shared tier metadata refreshes written by copy-in-place.", labels, s.refreshes)
        family("shared_tier_errors_total", .counter, "Failed shared tier requests (lookups, uploads, refreshes), by kind.", labels,
               s.errors.sorted { $0.key < $1.key }.map { (["kind": $0.key], Double($0.value)) })
        gauge("shared_tier_queue_depth", "Uploads to the shared tier waiting or running.", labels, Double(s.queueDepth))
        let state: String
        var failures = 0
        switch s.breaker {
        case let .closed(count): state = "closed"; failures = count
        case .open: state = "open"
        case .halfOpen: state = "half_open"
        }
        family("shared_tier_breaker_state", .gauge, "The shared tier's circuit breaker: 1 for its current state.", labels,
               ["closed", "open", "half_open"].map { (["state": $0], $0 == state ? 1 : 0) })
        gauge("shared_tier_breaker_consecutive_failures", "Consecutive outages the closed breaker has counted.", labels,
              Double(failures))
    }

    /// Adds what a listing of the shared tier found under the fleet's prefix: objects and
    /// their bytes (`imgstore-admin stats --shared-tier URL --prometheus`).
    public mutating func appendSharedTierContents(objects: Int, bytes: Int, labels: [String: String] = [:]) {
        gauge("shared_tier_objects", "Objects in the shared tier under the fleet's prefix, as last listed.", labels, Double(objects))
        gauge("shared_tier_object_bytes", "Bytes of the objects in the shared tier under the fleet's prefix.", labels, Double(bytes))
    }
}

extension SharedTier.Statistics {
    /// These statistics in Prometheus' text format (see `PrometheusExposition.append(_:labels:)`).
    public func prometheusExposition(labels: [String: String] = [:]) -> String {
        var exposition = PrometheusExposition()
        exposition.append(self, labels: labels)
        return exposition.text
    }
}
