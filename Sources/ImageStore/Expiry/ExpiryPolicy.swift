import Foundation

/// The expiry and disk-budget settings of a store, resolved from its configuration, and the
/// rules that apply them to entries. Times are milliseconds since the Unix epoch.
struct ExpiryPolicy: Sendable {
    /// Lifetime of an entry put without a TTL; nil for never.
    var defaultTTL: TimeInterval?
    var sliding: Bool
    var sweepBatchSize: Int
    /// The disk budget's high and low watermarks in bytes of LMDB pages; nil for no budget.
    var budget: (high: Int, low: Int)?

    init(_ configuration: ImageStore.Configuration) {
        defaultTTL = configuration.defaultTTL
        sliding = configuration.slidingExpiration
        sweepBatchSize = max(1, configuration.sweepBatchSize)
        budget = configuration.maxDiskBytes.map { ($0, Int(Double($0) * configuration.diskBudgetLowWatermark)) }
    }

    /// Whether reads must note access times (for the budget's LRU order or sliding expiry).
    var tracksAccess: Bool { sliding || budget != nil }

    /// The expiry of an entry put at `now` with `ttl` (nil: the default; infinite: never),
    /// and its sliding lifetime in seconds (0 when fixed).
    func expiry(now: Int64, ttl: TimeInterval?) -> (expiresAt: Int64?, slidingSeconds: UInt32) {
        guard let seconds = ttl ?? defaultTTL, seconds.isFinite else { return (nil, 0) }
        let milliseconds = Int64((max(0, seconds) * 1000).rounded())
        return (now + milliseconds, sliding ? UInt32(clamping: Int64(seconds.rounded(.up))) : 0)
    }

    /// When `record` expires, counting reads noted in memory that slide it forward (a read is
    /// only noted while the entry is fresh, so each one extends it).
    func effectiveExpiry(of record: EntryRecord, lastAccess: Int64?) -> Int64? {
        guard let expiresAt = record.expiresAt else { return nil }
        guard record.slidingSeconds > 0, let lastAccess else { return expiresAt }
        return max(expiresAt, lastAccess + Int64(record.slidingSeconds) * 1000)
    }
}
