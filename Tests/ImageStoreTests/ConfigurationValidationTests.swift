import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Every number a caller gives the store is range-checked: out of range is `invalidArgument`,
/// never a trap, and nothing is stored.
@Suite struct ConfigurationValidationTests {
    static let longest = ImageStore.Configuration.maxLifetime
    static let year = ImageStore.Configuration.maxPeriod

    // MARK: - Lifetimes and intervals of a write

    @Test(arguments: [Duration.seconds(1e16), .seconds(-1), .nanoseconds(-1), longest + .nanoseconds(1),
                      .seconds(Int64.max), .seconds(Int64.min)])
    func anExpiryOutOfRangeIsATypedError(lifetime: Duration) throws {
        try withTemporaryStore { store throws in
            #expect(throws: ImageStoreError.invalidArgument(
                name: "expiry", value: "\(lifetime)", allowed: "from 0 to \(Self.longest) (100 years), or Expiry.never")) {
                try store.put(Data([1, 2, 3]), for: "https://x.test/a", expiry: .after(lifetime))
            }
            #expect(try store.entries().isEmpty)
        }
    }

    @Test func aMomentBeyondTheLongestLifetimeIsATypedError() throws {
        try withTemporaryStore { store throws in
            for moment in [Date.distantFuture, Date(timeIntervalSince1970: 1e300)] {
                #expect {
                    try store.put(Data([1]), for: "https://x.test/a", expiry: .at(moment))
                } throws: { error in
                    guard case .invalidArgument(name: "expiry", _, _)? = error as? ImageStoreError else { return false }
                    return true
                }
            }
            #expect(try store.entries().isEmpty)
        }
    }

    @Test func theLongestLifetimeZeroAndNeverAreAccepted() throws {
        try withTemporaryStore { store throws in
            #expect(try store.put(Data([1]), for: "https://x.test/a", expiry: .after(Self.longest)).expiresAt != nil)
            #expect(try store.put(Data([1]), for: "https://x.test/b", expiry: .never).expiresAt == nil)
            #expect(try store.put(Data([1]), for: "https://x.test/c", expiry: .after(.zero)).expiresAt != nil)
            #expect(try store.put(Data([1]), for: "https://x.test/d", expiry: .at(.distantPast)).expiresAt != nil)
        }
    }

    @Test(arguments: [Duration.zero, .seconds(-1), year + .nanoseconds(1), .seconds(Int64.max)])
    func aBatchIntervalOutOfRangeIsATypedError(interval: Duration) throws {
        try withTemporaryStore { store throws in
            #expect(throws: ImageStoreError.invalidArgument(
                name: "durability batched interval", value: "\(interval)", allowed: "greater than 0 and at most \(Self.year) (one year)")) {
                try store.put(Data([1]), for: "https://x.test/a", durability: .batched(within: interval))
            }
            #expect(try store.entries().isEmpty)
        }
    }

    // MARK: - The configuration

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
        case "defaultExpiry": configuration.defaultExpiry = .after(.seconds(1e16))
        case "sweepPeriod": configuration.sweepPeriod = .zero
        case "sweepBatchSize": configuration.sweepBatchSize = 0
        case "maxDiskBytes": configuration.maxDiskBytes = 0
        case "diskBudgetLowWatermark": configuration.diskBudgetLowWatermark = .nan
        case "durability": configuration.durability = .batched(within: .seconds(Int64.max))
        case "logSegmentBytes": configuration.logSegmentBytes = 0
        case "maxUnappliedBytes": configuration.maxUnappliedBytes = 0
        default: Issue.record("no such field \(field)")
        }
    }

    @Test(arguments: [
        "maxEntryBytes", "maxURLBytes", "initialMapSize", "maxMapSize", "maxReaders", "memoryCostLimit", "memoryCountLimit",
        "memoryMaxEntryBytes", "defaultExpiry", "sweepPeriod", "sweepBatchSize", "maxDiskBytes", "diskBudgetLowWatermark",
        "durability", "logSegmentBytes", "maxUnappliedBytes",
    ])
    func aConfigurationFieldOutOfRangeFailsTheOpenAndCreatesNothing(field: String) throws {
        var configuration = makeConfiguration()
        Self.breaking(field, &configuration)
        try Self.expectRefused(configuration, naming: field)
    }

    /// Each interval field's values just out of range, and the values no such field may hold.
    static let badIntervals: [(field: String, apply: @Sendable (inout ImageStore.Configuration) -> Void)] = [
        ("defaultExpiry", { $0.defaultExpiry = .after(.seconds(-1)) }),
        ("defaultExpiry", { $0.defaultExpiry = .after(longest + .nanoseconds(1)) }),
        ("defaultExpiry", { $0.defaultExpiry = .after(.seconds(Int64.max)) }),
        ("defaultExpiry", { $0.defaultExpiry = .storeDefault }),
        ("defaultExpiry", { $0.defaultExpiry = .at(Date()) }),
        ("sweepPeriod", { $0.sweepPeriod = .seconds(-1) }),
        ("sweepPeriod", { $0.sweepPeriod = year + .nanoseconds(1) }),
        ("sweepPeriod", { $0.sweepPeriod = .seconds(Int64.min) }),
        ("durability", { $0.durability = .batched(within: .zero) }),
        ("durability", { $0.durability = .batched(within: .seconds(-1)) }),
    ]

    @Test(arguments: 0..<badIntervals.count)
    func anIntervalOutOfRangeFailsTheOpenNamingItsField(index: Int) throws {
        var configuration = makeConfiguration()
        Self.badIntervals[index].apply(&configuration)
        try Self.expectRefused(configuration, naming: Self.badIntervals[index].field)
    }

    @Test func theEdgesOfEachIntervalAreAccepted() throws {
        var configuration = makeConfiguration()
        configuration.defaultExpiry = .after(Self.longest)
        configuration.sweepPeriod = Self.year
        configuration.durability = .batched(within: Self.year)
        try withTemporaryStore(configuration) { _ in }
        configuration.defaultExpiry = .after(.zero)
        configuration.sweepPeriod = .nanoseconds(1)
        configuration.durability = .batched(within: .nanoseconds(1))
        try withTemporaryStore(configuration) { _ in }
        configuration.defaultExpiry = .never
        configuration.sweepPeriod = nil
        try withTemporaryStore(configuration) { _ in }
    }

    /// The memory tier's limits at their edges open a store that works. `memoryMaxEntryBytes = 0`
    /// passed the range check and then trapped in `MemoryCache`'s precondition (`cap > 0`) when
    /// the store opened; it keeps no image in memory.
    @Test func theEdgesOfEachMemoryLimitAreAccepted() throws {
        let image = Data([1, 2, 3])
        var configuration = makeConfiguration()
        configuration.memoryMaxEntryBytes = 0
        try withTemporaryStore(configuration) { store throws in
            try store.put(image, for: "https://x.test/a")
            try store.checkpoint()
            #expect(try store.get("https://x.test/a")?.source == .disk)
            #expect(try store.get("https://x.test/a")?.source == .disk)  // not kept in memory
        }
        configuration.memoryMaxEntryBytes = .max
        configuration.memoryCountLimit = .max
        configuration.memoryCostLimit = .max
        try withTemporaryStore(configuration) { store throws in
            try store.put(image, for: "https://x.test/a")
            try store.checkpoint()
            #expect(try store.get("https://x.test/a")?.source == .disk)
            #expect(try store.get("https://x.test/a")?.source == .memory)
        }
    }

    /// Opening with `configuration` fails with `invalidArgument` naming `field`, and creates nothing.
    static func expectRefused(_ configuration: ImageStore.Configuration, naming field: String) throws {
        try withTemporaryDirectory { directory in
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
