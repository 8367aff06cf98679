import Foundation
import ImageStoreTestSupport
import MemoryCache
import Testing

@Suite struct EvictionOrderTests {
    // MARK: - Exact LRU (one shard)

    @Test func leastRecentlyUsedIsEvictedFirst() throws {
        let log = EvictionLog()
        let cache = try makeCache(countLimit: 3, log: log)
        for k in 1...3 { try cache.set("v\(k)", forKey: k, cost: 1) }
        #expect(cache.value(forKey: 1) == "v1")  // 1 is now the most recent; 2 is the least
        try cache.set("v4", forKey: 4, cost: 1)
        #expect(log.reasons(.capacity) == [2])
        #expect(cache._keysByRecency() == [[4, 1, 3]])
        cache._checkInvariants()
    }

    @Test func overwriteMakesTheKeyMostRecentWithoutReportingIt() throws {
        let log = EvictionLog()
        let cache = try makeCache(countLimit: 2, log: log)
        try cache.set("a", forKey: 1, cost: 1)
        try cache.set("b", forKey: 2, cost: 1)
        try cache.set("a2", forKey: 1, cost: 1)
        try cache.set("c", forKey: 3, cost: 1)
        #expect(log.all == [.init(key: 2, value: "b", reason: .capacity)])
        #expect(cache.value(forKey: 1) == "a2")
        cache._checkInvariants()
    }

    @Test func costLimitEvictsAsManyLeastRecentAsNeeded() throws {
        let log = EvictionLog()
        let cache = try makeCache(totalCostLimit: 10, log: log)
        for k in 1...5 { try cache.set("v", forKey: k, cost: 2) }
        try cache.set("big", forKey: 6, cost: 7)
        #expect(log.reasons(.capacity) == [1, 2, 3, 4])  // 2 + 2 + 7 > 10: 4 goes too; 2 + 7 fits
        #expect(cache.totalCost == 9)
        #expect(cache._keysByRecency() == [[6, 5]])
        cache._checkInvariants()
    }

    @Test func missesDoNotChangeTheOrder() throws {
        let cache = try makeCache(countLimit: 2)
        try cache.set("a", forKey: 1, cost: 1)
        try cache.set("b", forKey: 2, cost: 1)
        _ = cache.value(forKey: 99)
        #expect(cache._keysByRecency() == [[2, 1]])
    }

    // MARK: - Sharded: LRU within each shard

    @Test func shardedCacheEvictsTheLeastRecentOfTheKeysShard() throws {
        let log = EvictionLog()
        let cache = try makeCache(countLimit: 8, shardCount: 4, log: log)  // 2 entries per shard
        for k in 0..<200 {
            let before = cache._keysByRecency()
            let evictedBefore = log.all.count
            try cache.set("v", forKey: k, cost: 1)
            let after = cache._keysByRecency()
            let shard = after.firstIndex { $0.first == k }!
            if log.all.count > evictedBefore {
                // The victim is the LRU end of the very shard the new key went to.
                #expect(log.all.last!.key == before[shard].last!)
            }
            #expect(after.allSatisfy { $0.count <= 2 })
        }
        cache._checkInvariants()
    }
}

@Suite struct LimitPropertyTests {
    /// Random gets, sets (some over the cap), removes and trims on a one-shard cache, compared after every operation
    /// with the model: same entries, same order, same evictions.
    @Test(arguments: [(3, 0), (0, 40), (5, 30)])
    func exactLRUMatchesTheModelAfterEveryOperation(countLimit: Int, costLimit: Int) throws {
        let seed = testSeed("exactLRU(count: \(countLimit), cost: \(costLimit))")
        var rng = SeededGenerator(seed: seed)
        let log = EvictionLog()
        let cache = try makeCache(countLimit: countLimit, totalCostLimit: costLimit, maxEntryCost: 12, log: log)
        var model = LRUModel(
            countLimit: countLimit == 0 ? .max : countLimit, costLimit: costLimit == 0 ? .max : costLimit,
            maxEntryCost: costLimit == 0 ? 12 : min(12, costLimit))
        for step in 0..<3_000 {
            let key = Int.random(in: 0..<12, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case ..<40:
                #expect(cache.value(forKey: key) == model.get(key), "seed \(seed) step \(step)")
            case ..<85:
                let cost = Int.random(in: 1...14, using: &rng)
                try cache.set("\(key)@\(step)", forKey: key, cost: cost)
                try model.set("\(key)@\(step)", key, cost: cost)
            case ..<95:
                #expect(cache.removeValue(forKey: key) == model.remove(key), "seed \(seed) step \(step)")
            default:
                let count = Int.random(in: 0...6, using: &rng)
                try cache.trim(toCount: count)
                try model.trim(count: count, cost: .max)
            }
            cache._checkInvariants()
            #expect(cache._keysByRecency() == [model.order], "seed \(seed) step \(step)")
            #expect(cache.count == model.order.count && cache.totalCost == model.totalCost, "seed \(seed) step \(step)")
            if countLimit > 0 { #expect(cache.count <= countLimit) }
            if costLimit > 0 { #expect(cache.totalCost <= costLimit) }
            if log.all != model.evicted {
                Issue.record("evictions differ, seed \(seed) step \(step)")
                return
            }
        }
    }

    /// The sharded cache keeps the global limits after every operation and never returns a value other than the
    /// last one set under a key.
    @Test(arguments: [MemoryCachePolicy.lru, .tinyLFU], [1, 4])
    func limitsHoldAfterEveryOperationAndNoValueIsStale(policy: MemoryCachePolicy, shardCount: Int) throws {
        let seed = testSeed("limits(\(policy), shards: \(shardCount))")
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let log = EvictionLog()
        let cache = try makeCache(
            countLimit: 40, totalCostLimit: 4_000, maxEntryCost: 200, policy: policy, shardCount: shardCount,
            clock: clock, log: log)
        var latest: [Int: String] = [:]
        for step in 0..<5_000 {
            let key = Int.random(in: 0..<100, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case ..<5:
                if let v = cache.value(forKey: key) { #expect(v == latest[key], "seed \(seed) step \(step)") }
            case ..<9:
                let v = "\(key)@\(step)"
                let ttl: Int64? = Bool.random(using: &rng) ? Int64.random(in: 0...50, using: &rng) : nil
                try cache.set(
                    v, forKey: key, cost: Int.random(in: 1...260, using: &rng), expiresAt: ttl.map { clock.now + $0 })
                latest[key] = v
            default:
                if Int.random(in: 0..<10, using: &rng) == 0 {
                    try cache.trim(toCost: Int.random(in: 0...4_000, using: &rng))
                }
                cache.removeValue(forKey: key)
                latest[key] = nil
            }
            clock.advance(by: Int64.random(in: 0...2, using: &rng))
            #expect(cache.count <= 40 && cache.totalCost <= 4_000, "seed \(seed) step \(step)")
            if step % 97 == 0 { cache._checkInvariants() }
        }
        cache._checkInvariants()
        // Every entry that left was reported exactly once: inserted = held + evicted (overwrites aside).
        let s = cache.statistics
        #expect(log.all.count == s.evictions.total, "seed \(seed)")
    }
}

@Suite struct TinyLFUTests {
    /// A few popular keys survive a long scan of keys used once; under LRU the scan flushes them.
    @Test(arguments: [MemoryCachePolicy.lru, .tinyLFU])
    func popularKeysSurviveAScan(policy: MemoryCachePolicy) throws {
        let cache = try makeCache(countLimit: 100, policy: policy)
        for round in 0..<5 {
            for k in 0..<50 where cache.value(forKey: k) == nil { try cache.set("hot \(round)", forKey: k, cost: 1) }
        }
        for k in 1_000..<2_000 where cache.value(forKey: k) == nil { try cache.set("scan", forKey: k, cost: 1) }
        let survivors = (0..<50).filter { cache.value(forKey: $0) != nil }.count
        if policy == .tinyLFU { #expect(survivors >= 45) } else { #expect(survivors == 0) }
        cache._checkInvariants()
    }

    /// A hit under W-TinyLFU only marks the entry; it moves when it reaches the evicting end of its list (CLOCK's
    /// second chance), so reads write no list links.
    @Test func hitIsAppliedWhenTheEntryReachesTheEvictingEnd() throws {
        let log = EvictionLog()
        let cache = try makeCache(countLimit: 10, policy: .tinyLFU, log: log)  // window of 1, probation, protected
        for k in 0..<10 { try cache.set("v", forKey: k, cost: 1) }
        #expect(cache._keysByRecency() == [[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]])
        #expect(cache.value(forKey: 0) == "v")  // probation's LRU end, now marked
        #expect(cache._keysByRecency() == [[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]])  // not moved yet
        // 9 leaves the window and duels probation's end; 0 is there, marked, so it is promoted to protected first and
        // the duel is 9 against 1 (which one loses depends on the frequency sketch's hash collisions).
        try cache.set("v", forKey: 10, cost: 1)
        #expect(log.reasons(.capacity) == [9] || log.reasons(.capacity) == [1])
        #expect(cache._keysByRecency()[0].prefix(2) == [10, 0])
        cache._checkInvariants()
    }

    @Test func newEntryIsAdmittedWhileThereIsRoom() throws {
        let cache = try makeCache(countLimit: 10, policy: .tinyLFU)
        for k in 0..<10 { try cache.set("v", forKey: k, cost: 1) }
        #expect((0..<10).allSatisfy { cache.value(forKey: $0) == "v" })
        cache._checkInvariants()
    }

    @Test func overwriteIsNeverStaleEvenWhenTheNewValueLosesAdmission() throws {
        let cache = try makeCache(countLimit: 4, policy: .tinyLFU)
        for _ in 0..<5 { for k in 0..<4 { if cache.value(forKey: k) == nil { try cache.set("old", forKey: k, cost: 1) } } }
        try cache.set("new", forKey: 99, cost: 1)
        #expect(cache.value(forKey: 99) == nil || cache.value(forKey: 99) == "new")
        try cache.set("new", forKey: 2, cost: 1)
        #expect(cache.value(forKey: 2) == "new")
        cache._checkInvariants()
    }
}

@Suite struct CostCapTests {
    @Test func entryOverTheCapIsNotCachedAndDropsTheOlderValue() throws {
        let log = EvictionLog()
        let cache = try makeCache(totalCostLimit: 100, maxEntryCost: 10, log: log)
        try cache.set("small", forKey: 1, cost: 10)
        try cache.set("other", forKey: 2, cost: 5)
        try cache.set("huge", forKey: 1, cost: 11)
        #expect(cache.value(forKey: 1) == nil)  // never the old "small"
        #expect(cache.value(forKey: 2) == "other")  // nothing else flushed
        #expect(log.all == [.init(key: 1, value: "huge", reason: .costCap)])
        #expect(cache.statistics.evictions.costCap == 1)
        #expect(cache.totalCost == 5)
        cache._checkInvariants()
    }

    @Test func entryLargerThanItsShardsShareIsRefused() throws {
        let cache = try makeCache(totalCostLimit: 100, shardCount: 4)  // 25 per shard
        try cache.set("x", forKey: 1, cost: 26)
        #expect(cache.value(forKey: 1) == nil)
        #expect(cache.statistics.evictions.costCap == 1)
        try cache.set("y", forKey: 1, cost: 25)
        #expect(cache.value(forKey: 1) == "y")
    }
}

@Suite struct ExpiryTests {
    /// An entry is gone from its `expiresAt` on, by the configured clock (`value(forKey:)`) or by the time a caller
    /// supplies (`value(forKey:now:)`), which is asked for only by an entry that has an expiry: a miss or an entry
    /// that never expires reads no clock.
    @Test(arguments: [false, true])
    func expiredEntryIsAbsentAndReported(suppliedTime: Bool) throws {
        let clock = ManualClock()
        let log = EvictionLog()
        let cache = try makeCache(clock: clock, log: log)
        var asked = 0
        func value(_ key: Int) -> String? {
            guard suppliedTime else { return cache.value(forKey: key) }
            return cache.value(forKey: key, now: { asked += 1; return clock.now })
        }
        try cache.set("a", forKey: 1, cost: 1, expiresAt: clock.now + 100)
        try cache.set("b", forKey: 2, cost: 1)
        clock.advance(by: 99)
        #expect(value(1) == "a")
        clock.advance(by: 1)
        #expect(value(1) == nil)
        #expect(value(2) == "b")
        #expect(value(3) == nil)
        #expect(asked == (suppliedTime ? 2 : 0))
        #expect(log.all == [.init(key: 1, value: "a", reason: .expired)])
        let stats = cache.statistics
        #expect(stats.hits == 2 && stats.misses == 2 && stats.evictions.expired == 1 && stats.count == 1)
        cache._checkInvariants()
    }

    @Test func settingAnAlreadyExpiredEntryDropsTheOlderValue() throws {
        let clock = ManualClock()
        let log = EvictionLog()
        let cache = try makeCache(clock: clock, log: log)
        try cache.set("old", forKey: 1, cost: 1)
        try cache.set("new", forKey: 1, cost: 1, expiresAt: clock.now)
        #expect(cache.value(forKey: 1) == nil)
        #expect(log.all == [.init(key: 1, value: "new", reason: .expired)])
    }

    @Test func removeExpiredSweepsEveryShard() throws {
        let clock = ManualClock()
        let log = EvictionLog()
        let cache = try makeCache(shardCount: 4, clock: clock, log: log)
        for k in 0..<100 { try cache.set("v", forKey: k, cost: 1, expiresAt: k % 2 == 0 ? clock.now + 10 : nil) }
        clock.advance(by: 10)
        cache.removeExpired()
        #expect(Set(log.reasons(.expired)) == Set(stride(from: 0, to: 100, by: 2)))
        #expect(cache.count == 50)
        cache._checkInvariants()
    }
}

@Suite struct CallbackAndStatisticsTests {
    @Test func reasonsForEveryWayOut() throws {
        let clock = ManualClock()
        let log = EvictionLog()
        let cache = try makeCache(countLimit: 2, maxEntryCost: 5, clock: clock, log: log)
        try cache.set("a", forKey: 1, cost: 1)
        try cache.set("b", forKey: 2, cost: 1)
        try cache.set("c", forKey: 3, cost: 1)  // evicts 1
        try cache.set("d", forKey: 4, cost: 6)  // over the cap
        cache.removeValue(forKey: 2)
        try cache.set("e", forKey: 5, cost: 1, expiresAt: clock.now + 1)
        clock.advance(by: 1)
        _ = cache.value(forKey: 5)
        cache.removeAll()
        #expect(
            log.all == [
                .init(key: 1, value: "a", reason: .capacity),
                .init(key: 4, value: "d", reason: .costCap),
                .init(key: 2, value: "b", reason: .removed),
                .init(key: 5, value: "e", reason: .expired),
                .init(key: 3, value: "c", reason: .removed),
            ])
        var expected = MemoryCacheStatistics()
        expected.hits = 0
        expected.misses = 1
        expected.insertions = 4
        expected.evictions = .init(capacity: 1, costCap: 1, expired: 1, removed: 2)
        #expect(cache.statistics == expected)
    }

    @Test func callbackRunsOutsideTheLockSoItMayUseTheCache() throws {
        let cache = try MemoryCache<Int, String>(
            configuration: .init(countLimit: 1, shardCount: 1, onEviction: { _, _, _ in }))
        let reentrant = try MemoryCache<Int, String>(
            configuration: .init(
                countLimit: 1, shardCount: 1,
                onEviction: { key, _, _ in
                    do { try cache.set("evicted \(key)", forKey: key, cost: 1) } catch { Issue.record(error) }
                }))
        try reentrant.set("a", forKey: 1, cost: 1)
        // Would deadlock (a Mutex is not recursive) if the callback ran under the lock of `reentrant`.
        try reentrant.set("b", forKey: 2, cost: 1)
        #expect(cache.value(forKey: 1) == "evicted 1")
    }

    @Test func hitsMissesInsertions() throws {
        let cache = try makeCache(shardCount: 8)
        for k in 0..<10 { try cache.set("v", forKey: k, cost: 3) }
        for k in 0..<15 { _ = cache.value(forKey: k) }
        let s = cache.statistics
        #expect(s.hits == 10 && s.misses == 5 && s.insertions == 10 && s.count == 10 && s.totalCost == 30)
        #expect(abs(s.hitRatio - 10.0 / 15.0) < 1e-9)
    }
}

@Suite struct TrimTests {
    @Test func trimToCostAndCountEvictLeastRecentFirst() throws {
        let log = EvictionLog()
        let cache = try makeCache(log: log)
        for k in 1...6 { try cache.set("v", forKey: k, cost: k) }  // total 21
        _ = cache.value(forKey: 1)
        try cache.trim(toCost: 12)
        #expect(log.reasons(.capacity) == [2, 3, 4])  // 1 was just used: 1 + 5 + 6 = 12
        try cache.trim(toCount: 1)
        #expect(log.reasons(.capacity) == [2, 3, 4, 5, 6])
        #expect(cache._keysByRecency() == [[1]])
        try cache.trim(toCount: 0)
        #expect(cache.count == 0 && cache.totalCost == 0)
        cache._checkInvariants()
    }

    @Test func shardedTrimKeepsTheTotalWithinTheTarget() throws {
        let cache = try makeCache(shardCount: 4)
        for k in 0..<1000 { try cache.set("v", forKey: k, cost: 1 + k % 7) }
        try cache.trim(toCost: 555)
        #expect(cache.totalCost <= 555)
        try cache.trim(toCount: 101)
        #expect(cache.count <= 101)
        cache._checkInvariants()
    }
}

@Suite struct ConfigurationTests {
    @Test(
        arguments: [
            (0, 64 << 20, nil, 16), (100, 0, nil, 1), (1_000, 0, nil, 8), (0, 10_000, nil, 8),
            (0, 64 << 20, 8 << 20, 2),
        ] as [(Int, Int, Int?, Int)])
    func automaticShardCount(countLimit: Int, costLimit: Int, cap: Int?, expected: Int) throws {
        let config = MemoryCache<Int, Int>.Configuration(
            countLimit: countLimit, totalCostLimit: costLimit, maxEntryCost: cap)
        #expect(config.effectiveShardCount == expected)
    }

    @Test func requestedShardCountRoundsUpToAPowerOfTwo() throws {
        #expect(MemoryCache<Int, Int>.Configuration(shardCount: 3).effectiveShardCount == 4)
        #expect(MemoryCache<Int, Int>.Configuration(shardCount: 1000).effectiveShardCount == 64)
    }

    @Test func limitsThatDoNotDivideEvenlyStillSumToTheGlobalLimit() throws {
        let cache = try makeCache(countLimit: 10, shardCount: 4)  // shares 3, 3, 2, 2
        for k in 0..<1000 { try cache.set("v", forKey: k, cost: 1) }
        #expect(cache.count == 10)
        cache._checkInvariants()
    }
}

@Suite struct ConcurrencyTests {
    /// Four threads of random gets, sets, removes and trims; afterwards the cache is consistent and within limits.
    /// Run under `swift test --sanitize=thread` too.
    @Test(arguments: [MemoryCachePolicy.lru, .tinyLFU], [1, 8])
    func stressFromFourThreads(policy: MemoryCachePolicy, shardCount: Int) async throws {
        let seed = testSeed("stress(\(policy), shards: \(shardCount))")
        let log = EvictionLog()
        let cache = try makeCache(
            countLimit: 64, totalCostLimit: 2_000, maxEntryCost: 100, policy: policy, shardCount: shardCount, log: log)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var rng = SeededGenerator(seed: seed &+ UInt64(t))
                    for i in 0..<20_000 {
                        let key = Int.random(in: 0..<200, using: &rng)
                        switch Int.random(in: 0..<100, using: &rng) {
                        case ..<60: _ = cache.value(forKey: key)
                        case ..<95: try cache.set("\(t).\(i)", forKey: key, cost: Int.random(in: 1...120, using: &rng))
                        case ..<99: cache.removeValue(forKey: key)
                        default: try cache.trim(toCount: 32)
                        }
                        if i % 1000 == 0 { #expect(cache.count <= 64 && cache.totalCost <= 2_000) }
                    }
                }
            }
            try await group.waitForAll()
        }
        cache._checkInvariants()
        let s = cache.statistics
        #expect(s.count <= 64 && s.totalCost <= 2_000)
        #expect(s.hits + s.misses > 0 && s.insertions > 0)
        #expect(log.all.count == s.evictions.total)
    }
}

@Suite struct HashTableTests {
    /// Keys that hash to only three values: every lookup probes, every removal shifts a long run back.
    struct CollidingKey: Hashable, Sendable {
        var id: Int
        func hash(into hasher: inout Hasher) { hasher.combine(id % 3) }
    }

    @Test(arguments: [MemoryCachePolicy.lru, .tinyLFU])
    func collidingKeysMatchADictionary(policy: MemoryCachePolicy) throws {
        let seed = testSeed("colliding(\(policy))")
        var rng = SeededGenerator(seed: seed)
        let cache = try MemoryCache<CollidingKey, Int>(configuration: .init(
            countLimit: 0, totalCostLimit: 0, policy: policy, shardCount: 1))
        var model: [CollidingKey: Int] = [:]
        for step in 0..<4_000 {
            let key = CollidingKey(id: Int.random(in: 0..<60, using: &rng))
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                try cache.set(step, forKey: key, cost: 1)
                model[key] = step
            case 1:
                #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key), "seed \(seed) step \(step)")
            default:
                #expect(cache.value(forKey: key) == model[key], "seed \(seed) step \(step)")
            }
            if step % 50 == 0 { cache._checkInvariants() }
        }
        #expect(cache.count == model.count)
        cache._checkInvariants()
    }
}

/// The `hash:` variants: a caller that hashes its keys already supplies the hash, and the cache
/// places, finds and removes entries by it (never by `hashValue`).
@Suite struct SuppliedHashTests {
    @Test func entriesAreFoundAndRemovedByTheSuppliedHashAcrossShards() throws {
        let cache = try makeCache(countLimit: 1_000, policy: .tinyLFU, shardCount: 8)
        /// A hash unrelated to `hashValue`, as a caller's own hash function would give.
        func supplied(_ key: Int) -> Int { Int(bitPattern: UInt(truncatingIfNeeded: key) &* 0x9E37_79B9_7F4A_7C15) }
        for key in 0..<200 { try cache.set("v\(key)", forKey: key, hash: supplied(key), cost: 1) }
        for key in 0..<200 {
            #expect(cache.value(forKey: key, hash: supplied(key), now: { 0 }) == "v\(key)")
            #expect(cache.value(forKey: key, hash: supplied(key), at: 0) == "v\(key)")
        }
        // Equal hashes but different keys never answer for each other.
        try cache.set("collides", forKey: 1_000, hash: supplied(7), cost: 1)
        #expect(cache.value(forKey: 7, hash: supplied(7), at: 0) == "v7")
        #expect(cache.value(forKey: 1_000, hash: supplied(7), at: 0) == "collides")
        for key in stride(from: 0, to: 200, by: 2) { #expect(cache.removeValue(forKey: key, hash: supplied(key)) == "v\(key)") }
        for key in 0..<200 {
            #expect(cache.value(forKey: key, hash: supplied(key), at: 0) == (key % 2 == 0 ? nil : "v\(key)"), "\(key)")
        }
        #expect(cache.count == 101)
        cache._checkInvariants()
    }
}
