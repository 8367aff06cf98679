import Foundation

/// The expiry and disk-budget settings of a store, resolved from its configuration, and the
/// rules that apply them to entries. Times are milliseconds since the Unix epoch.
struct ExpiryPolicy: Sendable {
    /// The lifetime of an entry put with `.storeDefault`: `.never` or `.after`.
    var defaultExpiry: Expiry
    var sliding: Bool
    var sweepBatchSize: Int
    /// The disk budget's high and low watermarks in bytes of LMDB pages; nil for no budget.
    var budget: (high: Int, low: Int)?

    init(_ configuration: ImageStore.Configuration) {
        defaultExpiry = configuration.defaultExpiry
        sliding = configuration.slidingExpiration
        sweepBatchSize = max(1, configuration.sweepBatchSize)
        budget = configuration.maxDiskBytes.map { ($0, Int(Double($0) * configuration.diskBudgetLowWatermark)) }
    }

    /// Checks a lifetime: from zero to `Configuration.maxLifetime`.
    /// - Throws: `invalidArgument` naming `name` for a negative lifetime or one over the limit.
    static func check(_ lifetime: Duration, name: String) throws(ImageStoreError) {
        let longest = ImageStore.Configuration.maxLifetime
        guard lifetime >= .zero && lifetime <= longest else {
            throw .invalidArgument(name: name, value: "\(lifetime)",
                                   allowed: "from 0 to \(longest) (100 years), or Expiry.never")
        }
    }

    /// A lifetime in seconds as the deprecated `ttl:` parameters took it (nil: the default,
    /// infinity: never), as an `Expiry`.
    /// - Throws: `invalidArgument` naming `ttl` for NaN, a negative value, or one over the limit.
    static func expiry(ttl: TimeInterval?) throws(ImageStoreError) -> Expiry {
        guard let ttl else { return .storeDefault }
        if ttl == .infinity { return .never }
        guard let lifetime = Duration(exactlySeconds: ttl) else {
            throw .invalidArgument(name: "ttl", value: "\(ttl)", allowed: "from 0 to 100 years in seconds, or ImageStore.never")
        }
        try check(lifetime, name: "ttl")
        return .after(lifetime)
    }

    /// Whether reads must note access times (for the budget's LRU order or sliding expiry).
    var tracksAccess: Bool { sliding || budget != nil }

    /// The expiry of an entry written at `now` with `expiry`, and its sliding lifetime in
    /// seconds (0 when fixed). `.at` a moment is the lifetime from `now` to it (zero when past).
    /// - Throws: `invalidArgument` naming `expiry` when the lifetime is out of range (see
    ///   `check(_:name:)`).
    func expiry(now: Int64, _ expiry: Expiry) throws(ImageStoreError) -> (expiresAt: Int64?, slidingSeconds: UInt32) {
        let lifetime: Duration
        switch expiry == .storeDefault ? defaultExpiry : expiry {
        case .never, .storeDefault:
            return (nil, 0)
        case let .after(duration):
            lifetime = duration
        case let .at(date):
            // In seconds first: a `Date` far out (or NaN) is no `Duration`, and is out of range.
            let seconds = max(0, date.timeIntervalSince1970 - Double(now) / 1000)
            guard let duration = Duration(exactlySeconds: seconds) else {
                throw .invalidArgument(name: "expiry", value: "\(expiry)", allowed: "a moment within 100 years from now")
            }
            lifetime = duration
        }
        try Self.check(lifetime, name: "expiry")
        // Invariant: checked above (or in `Configuration.validate()`), 0 <= lifetime <= maxLifetime,
        // so neither conversion below can trap and the sum cannot overflow for any clock before
        // the year 292 million.
        assert(lifetime >= .zero && lifetime <= ImageStore.Configuration.maxLifetime)
        let milliseconds = lifetime.milliseconds
        return (now.addingReportingOverflow(milliseconds).overflow ? .max : now + milliseconds,
                sliding ? UInt32(clamping: (milliseconds + 999) / 1000) : 0)
    }

    /// When `record` expires, counting reads noted in memory that slide it forward (a read is
    /// only noted while the entry is fresh, so each one extends it).
    func effectiveExpiry(of record: EntryRecord, lastAccess: Int64?) -> Int64? {
        guard let expiresAt = record.expiresAt else { return nil }
        guard record.slidingSeconds > 0, let lastAccess else { return expiresAt }
        return max(expiresAt, lastAccess + Int64(record.slidingSeconds) * 1000)
    }
}
