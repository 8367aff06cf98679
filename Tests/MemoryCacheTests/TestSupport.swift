import Foundation
import ImageStoreTestSupport
import MemoryCache
import Synchronization

/// A cache for tests: exact LRU (one shard, policy `.lru`) unless told otherwise, small limits, an optional manual
/// clock and an eviction log.
func makeCache(
    countLimit: Int = 0,
    totalCostLimit: Int = 0,
    maxEntryCost: Int? = nil,
    policy: MemoryCachePolicy = .lru,
    shardCount: Int? = 1,
    clock: ManualClock? = nil,
    log: EvictionLog? = nil
) throws -> MemoryCache<Int, String> {
    var configuration = MemoryCache<Int, String>.Configuration(
        countLimit: countLimit, totalCostLimit: totalCostLimit, maxEntryCost: maxEntryCost, policy: policy,
        shardCount: shardCount)
    if let clock { configuration.now = { clock.now } }
    if let log { configuration.onEviction = { key, value, reason in log.record(key, value, reason) } }
    return try MemoryCache(configuration: configuration)
}

/// A clock that moves only when a test says so.
final class ManualClock: Sendable {
    private let milliseconds: Atomic<Int64>
    init(_ start: Int64 = 1_000_000) { milliseconds = Atomic(start) }
    var now: Int64 { milliseconds.load(ordering: .relaxed) }
    func advance(by delta: Int64) { milliseconds.add(delta, ordering: .relaxed) }
}

/// Every eviction callback, in order.
///
/// Guarded by an `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`, which ThreadSanitizer cannot see on
/// Linux (see `ThreadSanitizerAnnotations` in the module); hence `@unchecked Sendable`: `entries` is only touched
/// under `lock`.
final class EvictionLog: @unchecked Sendable {
    struct Entry: Hashable, Sendable {
        var key: Int
        var value: String
        var reason: MemoryCacheEvictionReason
    }

    private let lock = NSLock()
    private var entries: [Entry] = []
    func record(_ key: Int, _ value: String, _ reason: MemoryCacheEvictionReason) {
        lock.withLock { entries.append(Entry(key: key, value: value, reason: reason)) }
    }
    var all: [Entry] { lock.withLock { entries } }
    var keys: [Int] { all.map(\.key) }
    func reasons(_ reason: MemoryCacheEvictionReason) -> [Int] { all.filter { $0.reason == reason }.map(\.key) }
}


/// The seed from `IMGSTORE_SEED`, else a fresh one; printed either way so a failure can be replayed.
func testSeed(_ test: String) -> UInt64 {
    let seed =
        ProcessInfo.processInfo.environment["IMGSTORE_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0...UInt64(UInt32.max))
    print("\(test): seed \(seed) (replay with IMGSTORE_SEED=\(seed))")
    return seed
}

/// The obvious exact LRU, to check the cache against: `order` from most to least recently used.
struct LRUModel {
    var countLimit: Int  // Int.max = unlimited
    var costLimit: Int
    var maxEntryCost: Int
    var order: [Int] = []
    var entries: [Int: (value: String, cost: Int)] = [:]
    var evicted: [EvictionLog.Entry] = []

    var totalCost: Int { entries.values.reduce(0) { $0 + $1.cost } }

    mutating func get(_ key: Int) -> String? {
        guard let e = entries[key] else { return nil }
        touch(key)
        return e.value
    }

    mutating func set(_ value: String, _ key: Int, cost: Int) {
        if cost > maxEntryCost {
            if entries.removeValue(forKey: key) != nil { order.removeAll { $0 == key } }
            evicted.append(.init(key: key, value: value, reason: .costCap))
            return
        }
        if entries[key] == nil { order.insert(key, at: 0) } else { touch(key) }
        entries[key] = (value, cost)
        trim(count: countLimit, cost: costLimit)
    }

    mutating func remove(_ key: Int) -> String? {
        guard let e = entries.removeValue(forKey: key) else { return nil }
        order.removeAll { $0 == key }
        evicted.append(.init(key: key, value: e.value, reason: .removed))
        return e.value
    }

    mutating func trim(count: Int, cost: Int) {
        while order.count > count || totalCost > cost {
            let victim = order.removeLast()
            evicted.append(.init(key: victim, value: entries.removeValue(forKey: victim)!.value, reason: .capacity))
        }
    }

    private mutating func touch(_ key: Int) {
        order.removeAll { $0 == key }
        order.insert(key, at: 0)
    }
}
