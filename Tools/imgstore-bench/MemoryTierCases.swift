import Foundation
import MemoryCache
import Synchronization

/// The memory tier against Foundation's `NSCache` with the same limits (NSCache is always given the cost).
///
/// Keys are `Int` for `MemoryCache` and pre-built `NSNumber`s for `NSCache`, so neither pays for key construction;
/// values are small distinct buffers whose *cost* is the image size, so the cache, not memory bandwidth, is measured.
/// MB/s is that nominal cost served (get) or stored (set) per second.
enum MemoryTierCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "memory.get-hit") { o in getCase("memory.get-hit", hit: true, options: o) },
        BenchmarkCase(name: "memory.get-miss") { o in getCase("memory.get-miss", hit: false, options: o) },
        BenchmarkCase(name: "memory.set-evict") { o in setEvict(options: o) },
        BenchmarkCase(name: "memory.zipf-hit-ratio") { o in zipfHitRatio(options: o) },
    ]

    static let threadCounts = [1, 2]
    static let residentKeys = 10_000
    /// imgstore's cache with its default policy first (the base of the ratios), then with plain LRU.
    static let policies: [(policy: MemoryCachePolicy, name: String)] = [
        (MemoryCache<Int, Data>.Configuration().policy, "MemoryCache"), (.lru, "MemoryCache .lru"),
    ]
    static let nscache = "NSCache"

    // MARK: - Cases

    /// Lookups of resident keys (hit) or of keys never stored (miss), uniformly at random, no eviction.
    static func getCase(_ name: String, hit: Bool, options: BenchmarkOptions) -> [Measurement] {
        let sizes = ImageSizeMix.sizes(keys: residentKeys, seed: 42)
        let limit = sizes.reduce(0, +) * 2
        let trace = uniformTrace(keys: residentKeys, count: 1 << 20, seed: 7)
        let offset = hit ? 0 : residentKeys  // misses look up keys residentKeys..<2*residentKeys
        let ops = options.ops(2_000_000)
        let values = makeValues(residentKeys)

        let mine = policies.map { makeMemoryCache(countLimit: 2 * residentKeys, costLimit: limit, policy: $0.policy) }
        let theirs = NSCacheBox(countLimit: 2 * residentKeys, costLimit: limit, keys: 2 * residentKeys)
        for k in 0..<residentKeys {
            for cache in mine { set(cache, values[k], forKey: k, cost: sizes[k]) }
            theirs.cache.setObject(theirs.objects[k], forKey: theirs.keys[k], cost: sizes[k])
        }
        var results: [Measurement] = []
        for threads in threadCounts {
            for (cache, system) in zip(mine, policies.map(\.name)) {
                results.append(
                    BenchmarkRunner.measure(
                        name, system: system, threads: threads, opsPerThread: ops, repetitions: options.repetitions
                    ) { t, r in
                        var bytes = 0
                        for i in r {
                            let k = trace[(i &+ t &* 499_979) & (trace.count - 1)]
                            if cache.value(forKey: k &+ offset) != nil { bytes &+= sizes[k] }
                        }
                        return bytes
                    })
            }
            results.append(
                BenchmarkRunner.measure(
                    name, system: nscache, threads: threads, opsPerThread: ops, repetitions: options.repetitions
                ) { t, r in
                    var bytes = 0
                    for i in r {
                        let k = trace[(i &+ t &* 499_979) & (trace.count - 1)]
                        if theirs.cache.object(forKey: theirs.keys[k &+ offset]) != nil { bytes &+= sizes[k] }
                    }
                    return bytes
                })
        }
        return results
    }

    /// Sets of keys not in the cache into a full 64 MiB cache: every set evicts (about one entry).
    static func setEvict(options: BenchmarkOptions) -> [Measurement] {
        let keySpace = 100_000  // far more than the ~400 entries 64 MiB holds, so a set never finds its key
        let sizes = ImageSizeMix.sizes(keys: keySpace, seed: 42)
        let ops = options.ops(1_000_000)
        let values = makeValues(keySpace)
        var results: [Measurement] = []
        for threads in threadCounts {
            let theirs = NSCacheBox(countLimit: 0, costLimit: 64 << 20, keys: keySpace)
            for (policy, system) in policies {
                let mine = makeMemoryCache(countLimit: 0, costLimit: 64 << 20, policy: policy)
                results.append(
                    BenchmarkRunner.measure(
                        "memory.set-evict", system: system, threads: threads, opsPerThread: ops,
                        repetitions: options.repetitions
                    ) { t, r in
                        var bytes = 0
                        for i in r {
                            let k = (i &* 7 &+ t &* 50_021) % keySpace
                            set(mine, values[k], forKey: k, cost: sizes[k])
                            bytes &+= sizes[k]
                        }
                        return bytes
                    })
            }
            results.append(
                BenchmarkRunner.measure(
                    "memory.set-evict", system: nscache, threads: threads, opsPerThread: ops,
                    repetitions: options.repetitions
                ) { t, r in
                    var bytes = 0
                    for i in r {
                        let k = (i &* 7 &+ t &* 50_021) % keySpace
                        theirs.cache.setObject(theirs.objects[k], forKey: theirs.keys[k], cost: sizes[k])
                        bytes &+= sizes[k]
                    }
                    return bytes
                })
        }
        return results
    }

    /// Replays a Zipf(0.9) trace (20 000 keys, 300 000 requests, image size mix, fixed seeds) against a 64 MiB cost
    /// limit: get, and set on a miss. Reports the hit ratio of each cache; single thread.
    static func zipfHitRatio(options: BenchmarkOptions) -> [Measurement] {
        let keys = 20_000
        let sizes = ImageSizeMix.sizes(keys: keys, seed: 42)
        let trace = ZipfGenerator(keys: keys, exponent: 0.9).trace(count: 300_000, seed: 7)
        let limit = 64 << 20
        let values = makeValues(keys)
        let name = "memory.zipf-hit-ratio"

        func replay(_ system: String, get: @escaping @Sendable (Int) -> Bool, set: @escaping @Sendable (Int) -> Void)
            -> Measurement
        {
            let hits = Atomic<Int>(0)
            var m = BenchmarkRunner.measure(name, system: system, threads: 1, opsPerThread: trace.count, warmUp: false)
            { _, r in
                var bytes = 0, h = 0
                for i in r {
                    let k = trace[i]
                    if get(k) { h += 1; bytes += sizes[k] } else { set(k) }
                }
                hits.add(h, ordering: .relaxed)
                return bytes
            }
            m.hitRatio = Double(hits.load(ordering: .relaxed)) / Double(trace.count)
            return m
        }

        let theirs = NSCacheBox(countLimit: 0, costLimit: limit, keys: keys)
        var systems = policies.map { ($0.name, makeMemoryCache(countLimit: 0, costLimit: limit, policy: $0.policy)) }
        for policy in [MemoryCachePolicy.tinyLFU, .lru] {
            let exact = makeMemoryCache(.init(totalCostLimit: limit, policy: policy, shardCount: 1))
            systems.append(("\(policy == .lru ? "LRU" : "W-TinyLFU") 1 shard", exact))
        }
        return systems.map { system, cache in
            replay(
                system, get: { cache.value(forKey: $0) != nil },
                set: { set(cache, values[$0], forKey: $0, cost: sizes[$0]) })
        } + [
            replay(
                nscache, get: { theirs.cache.object(forKey: theirs.keys[$0]) != nil },
                set: {
                    theirs.cache.setObject(theirs.objects[$0], forKey: theirs.keys[$0], cost: sizes[$0])
                })
        ]
    }

    // MARK: - Setup

    /// One small, distinct buffer per key: a shared one would make every hit retain the same object, and the two
    /// threads would then fight over its reference count instead of measuring the cache.
    static func makeValues(_ n: Int) -> [Data] { (0..<n).map { _ in Data(count: 64) } }

    static func makeMemoryCache(countLimit: Int, costLimit: Int, policy: MemoryCachePolicy) -> MemoryCache<Int, Data> {
        makeMemoryCache(.init(countLimit: countLimit, totalCostLimit: costLimit, policy: policy))
    }

    /// A cache with `configuration`; the benchmark's configurations are valid, so a refusal ends the run with it.
    static func makeMemoryCache(_ configuration: MemoryCache<Int, Data>.Configuration) -> MemoryCache<Int, Data> {
        do { return try MemoryCache(configuration: configuration) } catch { fail("\(error)") }
    }

    /// `cache.set`, whose one refusal (a cost below 1) the benchmark's sizes never reach; if one did, the run ends.
    @inline(__always)
    static func set(_ cache: MemoryCache<Int, Data>, _ value: Data, forKey key: Int, cost: Int) {
        do { try cache.set(value, forKey: key, cost: cost) } catch { fail("\(error)") }
    }
}

/// An `NSCache` with pre-built keys `0..<keys`.
///
/// `@unchecked Sendable`: NSCache is documented as thread-safe (it locks internally) but is not annotated `Sendable`
/// in swift-corelibs-foundation; `keys` is immutable after `init`.
final class NSCacheBox: @unchecked Sendable {
    let cache = NSCache<NSNumber, NSData>()
    let keys: [NSNumber]
    /// One small, distinct value per key.
    let objects: [NSData]

    init(countLimit: Int, costLimit: Int, keys: Int) {
        cache.countLimit = countLimit
        cache.totalCostLimit = costLimit
        self.keys = (0..<keys).map { NSNumber(value: $0) }
        self.objects = (0..<keys).map { _ in NSData(data: Data(count: 64)) }
    }
}
