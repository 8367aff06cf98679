import MemoryCache
import Testing

/// Every number a caller gives `MemoryCache` is range-checked: a bad one is a typed error that names it, and the
/// cache is left as it was (issue 14 §1: "every number a caller can give gets a typed error"). Before, each of these
/// trapped with a `precondition`.
@Suite struct InvalidArgumentTests {
    typealias Configuration = MemoryCache<Int, String>.Configuration

    /// Each bad configuration, the field its error must name and the value it must give. The
    /// test takes an index: a configuration holds closures, which make poor test arguments.
    static let bad: [(field: String, configuration: Configuration, value: Int)] = [
        ("countLimit", Configuration(countLimit: -1), -1),
        ("totalCostLimit", Configuration(totalCostLimit: -1), -1),
        ("totalCostLimit", Configuration(totalCostLimit: .min), Int.min),
        ("maxEntryCost", Configuration(maxEntryCost: 0), 0),
        ("maxEntryCost", Configuration(maxEntryCost: -5), -5),
        ("shardCount", Configuration(shardCount: 0), 0),
        ("shardCount", Configuration(shardCount: -3), -3),
    ]

    @Test(arguments: 0..<bad.count)
    func aConfigurationFieldOutOfRangeIsATypedError(index: Int) {
        let (field, configuration, value) = Self.bad[index]
        #expect {
            _ = try MemoryCache(configuration: configuration)
        } throws: { error in
            guard case let .invalidArgument(name, given, _) = error as? MemoryCacheError else { return false }
            return name == "Configuration.\(field)" && given == value
        }
        #expect(throws: MemoryCacheError.self) { try configuration.validate() }
    }

    @Test func theLargestValuesAreAccepted() throws {
        // `.lru`: W-TinyLFU sizes each shard's frequency sketch for its share of the count
        // limit (up to 2²⁰ entries), which for 64 shards is half a gigabyte up front.
        let cache = try MemoryCache<Int, String>(configuration: .init(
            countLimit: .max, totalCostLimit: .max, maxEntryCost: .max, policy: .lru, shardCount: .max))
        try cache.set("x", forKey: 1, cost: 1 << 40)
        #expect(cache.value(forKey: 1) == "x")
        // Costs that would sum past Int.max in an unlimited cache (this overflowed, a trap): each entry is kept,
        // evicted, or refused as over the cap, and the totals stay exact.
        let log = EvictionLog()
        let unlimited = try makeCache(totalCostLimit: 0, policy: .lru, shardCount: 1, log: log)
        let large = MemoryCache<Int, String>.largestShardCost / 2 + 1
        for key in 0..<3 { try unlimited.set("\(key)", forKey: key, cost: large) }
        #expect(unlimited.count == 1 && unlimited.value(forKey: 2) == "2" && unlimited.totalCost == large)
        try unlimited.set("huge", forKey: 3, cost: .max)
        #expect(unlimited.value(forKey: 3) == nil)
        #expect(log.all.map(\.reason) == [.capacity, .capacity, .costCap])
        let sharded = try makeCache(totalCostLimit: .max, shardCount: 64)
        for key in 0..<2_000 { try sharded.set("\(key)", forKey: key, cost: MemoryCache<Int, String>.largestShardCost) }
        #expect(sharded.totalCost == sharded.count * MemoryCache<Int, String>.largestShardCost)
        #expect(sharded.statistics.totalCost == sharded.totalCost)
        unlimited._checkInvariants()
        sharded._checkInvariants()
        #expect(cache.configuration.effectiveShardCount == 64)
        // The automatic shard count with the largest cap (its `4 × cap` overflowed).
        #expect(Configuration(totalCostLimit: .max, maxEntryCost: .max).effectiveShardCount == 1)
        #expect(MemoryCache<Int, String>().value(forKey: 1) == nil)  // the default cache needs no `try`
    }

    @Test(arguments: [0, -1, Int.min])
    func aCostBelowOneIsATypedErrorAndTheCacheIsUnchanged(cost: Int) throws {
        let cache = try makeCache(totalCostLimit: 100)
        try cache.set("old", forKey: 1, cost: 10)
        #expect(throws: MemoryCacheError.invalidArgument(name: "cost", value: cost, expected: "at least 1")) {
            try cache.set("free", forKey: 1, cost: cost)
        }
        #expect(cache.value(forKey: 1) == "old")
        #expect(cache.totalCost == 10)
        #expect(cache.statistics.insertions == 1)
        cache._checkInvariants()
    }

    @Test func aNegativeTrimIsATypedErrorAndEvictsNothing() throws {
        let cache = try makeCache(countLimit: 10)
        for key in 0..<5 { try cache.set("\(key)", forKey: key, cost: 1) }
        #expect(throws: MemoryCacheError.invalidArgument(name: "cost", value: -1, expected: "at least 0")) {
            try cache.trim(toCost: -1)
        }
        #expect(throws: MemoryCacheError.invalidArgument(name: "count", value: -1, expected: "at least 0")) {
            try cache.trim(toCount: -1)
        }
        #expect(cache.count == 5)
        try cache.trim(toCount: 2)
        #expect(cache.count == 2)
    }

    @Test func theErrorSaysWhatWasGivenAndWhatIsAllowed() {
        let error = MemoryCacheError.invalidArgument(name: "Configuration.countLimit", value: -1,
                                                     expected: "at least 0 (0 = unlimited)")
        #expect(error.description == "MemoryCache: Configuration.countLimit is -1; it must be at least 0 (0 = unlimited)")
    }
}
