import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Every number a caller gives the store is range-checked: out of range is `invalidArgument`,
/// never a trap, and nothing is stored.
@Suite struct ConfigurationValidationTests {
    @Test(arguments: [1e16, -1, .nan, -.infinity, ImageStore.Configuration.maxTTL + 1])
    func aTTLOutOfRangeIsATypedError(ttl: Double) throws {
        try withTemporaryStore { store throws in
            #expect {
                try store.put(Data([1, 2, 3]), for: "https://x.test/a", ttl: ttl)
            } throws: { error in
                guard case .invalidArgument(name: "ttl", _, _)? = error as? ImageStoreError else { return false }
                return true
            }
            #expect(try store.entries().isEmpty)
        }
    }

    @Test func theLongestTTLAndNeverAreAccepted() throws {
        try withTemporaryStore { store throws in
            let longest = try store.put(Data([1]), for: "https://x.test/a", ttl: ImageStore.Configuration.maxTTL)
            #expect(longest.expiresAt != nil)
            #expect(try store.put(Data([1]), for: "https://x.test/b", ttl: ImageStore.never).expiresAt == nil)
            #expect(try store.put(Data([1]), for: "https://x.test/c", ttl: 0).expiresAt != nil)
        }
    }

    @Test func aBatchIntervalOutOfRangeIsATypedError() throws {
        try withTemporaryStore { store throws in
            for interval in [0, -1, .nan, .infinity, 1e300] as [Double] {
                #expect(throws: ImageStoreError.self) {
                    try store.put(Data([1]), for: "https://x.test/a", durability: .batched(interval: interval))
                }
            }
            #expect(try store.entries().isEmpty)
        }
    }

    /// Sets `field` of `configuration` to a value out of its range.
    private static func breaking(_ field: String, _ configuration: inout ImageStore.Configuration) {
        switch field {
        case "maxEntryBytes": configuration.maxEntryBytes = 0
        case "maxURLBytes": configuration.maxURLBytes = -1
        case "initialMapSize": configuration.initialMapSize = 0
        case "maxMapSize": configuration.maxMapSize = configuration.initialMapSize - 1
        case "maxReaders": configuration.maxReaders = 0
        case "memoryCostLimit": configuration.memoryCostLimit = -1
        case "memoryCountLimit": configuration.memoryCountLimit = -1
        case "memoryMaxEntryBytes": configuration.memoryMaxEntryBytes = -1
        case "defaultTTL": configuration.defaultTTL = 1e16
        case "sweepInterval": configuration.sweepInterval = .infinity
        case "sweepBatchSize": configuration.sweepBatchSize = 0
        case "maxDiskBytes": configuration.maxDiskBytes = 0
        case "diskBudgetLowWatermark": configuration.diskBudgetLowWatermark = .nan
        case "durability": configuration.durability = .batched(interval: .infinity)
        case "logSegmentBytes": configuration.logSegmentBytes = 0
        case "maxUnappliedBytes": configuration.maxUnappliedBytes = 0
        default: Issue.record("no such field \(field)")
        }
    }

    @Test(arguments: [
        "maxEntryBytes", "maxURLBytes", "initialMapSize", "maxMapSize", "maxReaders", "memoryCostLimit", "memoryCountLimit",
        "memoryMaxEntryBytes", "defaultTTL", "sweepInterval", "sweepBatchSize", "maxDiskBytes", "diskBudgetLowWatermark",
        "durability", "logSegmentBytes", "maxUnappliedBytes",
    ])
    func aConfigurationFieldOutOfRangeFailsTheOpenAndCreatesNothing(field: String) throws {
        try withTemporaryDirectory { directory in
            var configuration = makeConfiguration()
            Self.breaking(field, &configuration)
            #expect {
                try ImageStore(path: directory + "/s", configuration: configuration)
            } throws: { error in
                guard case let .invalidArgument(name, _, _)? = error as? ImageStoreError else { return false }
                return name.hasPrefix("Configuration." + field)
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/s"))
        }
    }
}
