import Foundation

extension ImageStore.Configuration {
    /// The longest lifetime an entry can be given other than `Expiry.never`: 100 years
    /// (Julian), so that the expiry, in milliseconds since 1970, and a sliding lifetime, in
    /// seconds as `UInt32`, always fit.
    public static let maxLifetime: Duration = .seconds(100 * 365.25 * 86_400)
    /// The longest `sweepPeriod`, `Durability.batched(within:)` interval and loader
    /// `downloadTimeout`: one year.
    public static let maxPeriod: Duration = .seconds(365 * 86_400)

    /// Checks every numeric field, so a bad value is a typed error when the store opens rather
    /// than a trap deep inside (an `Int64` conversion, a timer, a map size LMDB refuses).
    /// - Throws: `invalidArgument` naming the first field out of range.
    func validate() throws(ImageStoreError) {
        func require(_ ok: Bool, _ name: String, _ value: some CustomStringConvertible, _ allowed: String) throws(ImageStoreError) {
            guard ok else { throw .invalidArgument(name: "Configuration." + name, value: "\(value)", allowed: allowed) }
        }
        try require(maxEntryBytes > 0, "maxEntryBytes", maxEntryBytes, "greater than 0")
        try require(maxURLBytes > 0, "maxURLBytes", maxURLBytes, "greater than 0")
        try require(initialMapSize > 0, "initialMapSize", initialMapSize, "greater than 0")
        try require(maxMapSize >= initialMapSize, "maxMapSize", maxMapSize, "at least initialMapSize (\(initialMapSize))")
        try require((1...Int(Int32.max)).contains(maxReaders), "maxReaders", maxReaders, "from 1 to \(Int32.max)")
        try require(memoryCostLimit >= 0, "memoryCostLimit", memoryCostLimit, "0 (off) or more")
        try require(memoryCountLimit >= 0, "memoryCountLimit", memoryCountLimit, "0 (no limit) or more")
        try require(memoryMaxEntryBytes >= 0, "memoryMaxEntryBytes", memoryMaxEntryBytes, "0 or more")
        try checkRepresentable(prefix: "Configuration.")
        switch defaultExpiry {
        case .never: break
        case let .after(lifetime): try ExpiryPolicy.check(lifetime, name: "Configuration.defaultExpiry")
        case .at, .storeDefault:
            throw .invalidArgument(name: "Configuration.defaultExpiry", value: "\(defaultExpiry)", allowed: ".never or .after(a Duration)")
        }
        if let sweepPeriod {
            try require(sweepPeriod > .zero && sweepPeriod <= Self.maxPeriod, "sweepPeriod", sweepPeriod,
                        "greater than 0 and at most \(Self.maxPeriod) (one year), or nil")
        }
        try require(sweepBatchSize > 0, "sweepBatchSize", sweepBatchSize, "greater than 0")
        if let maxDiskBytes { try require(maxDiskBytes > 0, "maxDiskBytes", maxDiskBytes, "greater than 0, or nil") }
        try require(diskBudgetLowWatermark > 0 && diskBudgetLowWatermark <= 1, "diskBudgetLowWatermark", diskBudgetLowWatermark,
                    "greater than 0 and at most 1")
        try Self.check(durability, name: "Configuration.durability")
        try require(logSegmentBytes > 0, "logSegmentBytes", logSegmentBytes, "greater than 0")
        try require(maxUnappliedBytes > 0, "maxUnappliedBytes", maxUnappliedBytes, "greater than 0")
    }

    /// Checks a durability's batch interval.
    /// - Throws: `invalidArgument` unless the interval is greater than 0 and at most `maxPeriod`.
    static func check(_ durability: Durability, name: String) throws(ImageStoreError) {
        if durability == .storeDefault, name.hasPrefix("Configuration.") {
            throw .invalidArgument(name: name, value: "storeDefault", allowed: "sync, batched or background")
        }
        guard case let .batched(interval) = durability else { return }
        guard interval > .zero && interval <= maxPeriod else {
            throw .invalidArgument(name: name + " batched interval", value: "\(interval)",
                                   allowed: "greater than 0 and at most \(maxPeriod) (one year)")
        }
    }
}
