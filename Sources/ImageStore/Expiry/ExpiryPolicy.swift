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

    /// Checks a lifetime given by a caller: `ImageStore.never`, or from 0 to
    /// `Configuration.maxTTL` seconds.
    /// - Throws: `invalidArgument` for NaN, a negative value, or one over the limit.
    static func check(ttl: TimeInterval, name: String = "ttl") throws(ImageStoreError) {
        guard ttl == .infinity || (ttl >= 0 && ttl <= ImageStore.Configuration.maxTTL) else {
            throw .invalidArgument(name: name, value: "\(ttl)",
                                   allowed: "from 0 to \(Int(ImageStore.Configuration.maxTTL)) seconds (100 years), or ImageStore.never")
        }
    }

    /// Whether reads must note access times (for the budget's LRU order or sliding expiry).
    var tracksAccess: Bool { sliding || budget != nil }

    /// The expiry of an entry put at `now` with `ttl` (nil: the default; infinite: never),
    /// and its sliding lifetime in seconds (0 when fixed).
    /// - Throws: `invalidArgument` when `ttl` is out of range (see `check(ttl:)`).
    func expiry(now: Int64, ttl: TimeInterval?) throws(ImageStoreError) -> (expiresAt: Int64?, slidingSeconds: UInt32) {
        if let ttl { try Self.check(ttl: ttl) }
        guard let seconds = ttl ?? defaultTTL, seconds.isFinite else { return (nil, 0) }
        // Invariant: checked above (or in `Configuration.validate()`), 0 <= seconds <= maxTTL, so
        // neither conversion below can trap and the sum cannot overflow for any clock before
        // the year 292 million.
        assert(seconds >= 0 && seconds <= ImageStore.Configuration.maxTTL)
        let milliseconds = Int64((seconds * 1000).rounded())
        return (now.addingReportingOverflow(milliseconds).overflow ? .max : now + milliseconds,
                sliding ? UInt32(clamping: Int64(seconds.rounded(.up))) : 0)
    }

    /// When `record` expires, counting reads noted in memory that slide it forward (a read is
    /// only noted while the entry is fresh, so each one extends it).
    func effectiveExpiry(of record: EntryRecord, lastAccess: Int64?) -> Int64? {
        guard let expiresAt = record.expiresAt else { return nil }
        guard record.slidingSeconds > 0, let lastAccess else { return expiresAt }
        return max(expiresAt, lastAccess + Int64(record.slidingSeconds) * 1000)
    }
}
