import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Every number a caller gives the store is range-checked: out of range is `invalidArgument`,
/// never a trap, and nothing is stored.
@Suite struct ConfigurationValidationTests {
    @Test(arguments: [1e16, -1, .nan, -.infinity, ImageStore.Configuration.maxTTL + 1])
    func aTTLOutOfRangeIsATypedError(ttl: Double) throws {
        try withTemporaryStore { store in
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
        try withTemporaryStore { store in
            let longest = try store.put(Data([1]), for: "https://x.test/a", ttl: ImageStore.Configuration.maxTTL)
            #expect(longest.expiresAt != nil)
            #expect(try store.put(Data([1]), for: "https://x.test/b", ttl: ImageStore.never).expiresAt == nil)
            #expect(try store.put(Data([1]), for: "https://x.test/c", ttl: 0).expiresAt != nil)
        }
    }

    @Test func aBatchIntervalOutOfRangeIsATypedError() throws {
        try withTemporaryStore { store in
            for interval in [0, -1, .nan, .infinity, 1e300] as [Double] {
                #expect(throws: ImageStoreError.self) {
                    try store.put(Data([1]), for: "https://x.test/a", durability: .batched(interval: interval))
                }
            }
            #expect(try store.entries().isEmpty)
        }
    }

    @Test(arguments: [
        ("maxEntryBytes", { (c: inout ImageStore.Configuration) in c.maxEntryBytes = 0 }),
        ("maxURLBytes", { $0.maxURLBytes = -1 }),
        ("initialMapSize", { $0.initialMapSize = 0 }),
        ("maxMapSize", { $0.maxMapSize = $0.initialMapSize - 1 }),
        ("maxReaders", { $0.maxReaders = 0 }),
        ("memoryCostLimit", { $0.memoryCostLimit = -1 }),
        ("memoryCountLimit", { $0.memoryCountLimit = -1 }),
        ("memoryMaxEntryBytes", { $0.memoryMaxEntryBytes = -1 }),
        ("defaultTTL", { $0.defaultTTL = 1e16 }),
        ("sweepInterval", { $0.sweepInterval = .infinity }),
        ("sweepInterval", { $0.sweepInterval = 0 }),
        ("sweepBatchSize", { $0.sweepBatchSize = 0 }),
        ("maxDiskBytes", { $0.maxDiskBytes = 0 }),
        ("diskBudgetLowWatermark", { $0.diskBudgetLowWatermark = .nan }),
        ("durability", { $0.durability = .batched(interval: .infinity) }),
        ("logSegmentBytes", { $0.logSegmentBytes = 0 }),
        ("maxUnappliedBytes", { $0.maxUnappliedBytes = 0 }),
    ] as [(String, @Sendable (inout ImageStore.Configuration) -> Void)])
    func aConfigurationFieldOutOfRangeFailsTheOpenAndCreatesNothing(field: String, change: (inout ImageStore.Configuration) -> Void) throws {
        try withTemporaryDirectory { directory in
            var configuration = makeConfiguration()
            change(&configuration)
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
