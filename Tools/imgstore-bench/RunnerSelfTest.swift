import Foundation
import MemoryCache
import Synchronization

/// `bench.self-test.*`: work that shares nothing between threads, on 1 and 2 threads: pure arithmetic, and lookups in
/// a cache private to each thread, alone, each under one of 16 shared locks, and holding values both threads share.
/// Their scaling is what the machine gives right now (other processes take cores; the host places the vCPUs); a
/// shared cache cannot be expected to scale better than the private one, nor one that locks per hit better than the
/// private one under shared locks, nor one that hands out values both threads hold better than the private one with
/// shared values.
enum RunnerSelfTest {
    static let threadCounts = [1, 2]

    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "bench.self-test.arithmetic") { options in
            threadCounts.map { threads in
                BenchmarkRunner.measure(
                    "bench.self-test.arithmetic", system: "no shared state", threads: threads,
                    opsPerThread: options.ops(20_000_000), repetitions: options.repetitions
                ) { t, range in
                    var x = UInt64(t + 1)
                    for i in range { x = x &* 6_364_136_223_846_793_005 &+ UInt64(truncatingIfNeeded: i) }
                    return x == 0 ? 1 : 0  // depends on every step, so the loop is not removed; ~0 bytes
                }
            }
        },
        BenchmarkCase(name: "bench.self-test.private-cache") { options in
            privateCacheCase("bench.self-test.private-cache", system: "MemoryCache per thread", locks: nil, options: options)
        },
        BenchmarkCase(name: "bench.self-test.shared-locks") { options in
            privateCacheCase(
                "bench.self-test.shared-locks", system: "private cache, 16 shared locks", locks: (0..<16).map { _ in PaddedLock() },
                options: options)
        },
        BenchmarkCase(name: "bench.self-test.shared-values") { options in
            privateCacheCase(
                "bench.self-test.shared-values", system: "private cache, shared values", locks: nil, sharedValues: true,
                options: options)
        },
    ]

    /// Lookups of resident keys in a cache private to each thread. With `locks`, each lookup also holds the lock
    /// its key picks among them, as a shared `MemoryCache` hit holds its shard's (16 shards, picked the same way):
    /// the least a lock-per-hit design writes to lines both threads use. Its scaling bounds such a design's in the
    /// same run, as the cross-core cost of a line moves with where the host puts the two vCPUs.
    ///
    /// With `sharedValues`, both threads' caches hold the same values (as `memory.get-hit`'s shared cache does, 64-byte
    /// `Data`s): a hit returns a value the other thread also retains and releases, so its reference count is a line
    /// both threads write, the least a cache that returns shared values costs.
    static func privateCacheCase(
        _ name: String, system: String, locks: [PaddedLock]?, sharedValues: Bool = false, options: BenchmarkOptions
    ) -> [Measurement] {
        let trace = uniformTrace(keys: 10_000, count: 1 << 20, seed: 7)
        let shared = MemoryTierCases.makeValues(10_000)
        let caches = threadCounts.map { _ in
            let cache = MemoryTierCases.makeMemoryCache(.init(totalCostLimit: 0, policy: .lru))
            for k in 0..<10_000 { MemoryTierCases.set(cache, sharedValues ? shared[k] : Data(count: 64), forKey: k, cost: 1) }
            return cache
        }
        return threadCounts.map { threads in
            BenchmarkRunner.measure(
                name, system: system, threads: threads, opsPerThread: options.ops(2_000_000), repetitions: options.repetitions
            ) { t, range in
                var misses = 0
                for i in range {
                    let key = trace[(i &+ t &* 499_979) & (trace.count - 1)]
                    let found: Bool
                    if let locks {
                        let lock = locks[Int(truncatingIfNeeded: (UInt64(truncatingIfNeeded: key.hashValue) &* 0x9E37_79B9_7F4A_7C15) >> 60)]
                        found = lock.mutex.withLock { _ in caches[t].value(forKey: key) != nil }
                    } else {
                        found = caches[t].value(forKey: key) != nil
                    }
                    if !found { misses += 1 }
                }
                return misses  // 0: every key is resident
            }
        }
    }
}

/// A mutex in its own allocation, padded so two of them never share a cache line (as `MemoryCache`'s shards).
final class PaddedLock: Sendable {
    let mutex = Mutex<Int>(0)
    private let padding: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)
}
