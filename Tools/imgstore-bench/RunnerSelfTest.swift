import Foundation
import MemoryCache

/// `bench.self-test.*`: work that shares nothing between threads, on 1 and 2 threads: pure arithmetic, and lookups in
/// a cache private to each thread. Their scaling is what the machine gives right now (other processes take cores); a
/// shared cache cannot be expected to scale better than the private one.
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
            let trace = uniformTrace(keys: 10_000, count: 1 << 20, seed: 7)
            let caches = threadCounts.map { _ in
                let cache = MemoryTierCases.makeMemoryCache(.init(totalCostLimit: 0, policy: .lru))
                for k in 0..<10_000 { MemoryTierCases.set(cache, Data(count: 64), forKey: k, cost: 1) }
                return cache
            }
            return threadCounts.map { threads in
                BenchmarkRunner.measure(
                    "bench.self-test.private-cache", system: "MemoryCache per thread", threads: threads,
                    opsPerThread: options.ops(2_000_000), repetitions: options.repetitions
                ) { t, range in
                    var misses = 0
                    for i in range where caches[t].value(forKey: trace[(i &+ t &* 499_979) & (trace.count - 1)]) == nil {
                        misses += 1
                    }
                    return misses  // 0: every key is resident
                }
            }
        },
    ]
}
