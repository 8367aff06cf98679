/// `bench.self-test`: pure arithmetic with no shared state, on 1 and 2 threads. Its scaling is what the machine can
/// give right now; a cache case cannot be expected to scale better than this.
enum RunnerSelfTest {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "bench.self-test") { options in
            [1, 2].map { threads in
                BenchmarkRunner.measure(
                    "bench.self-test", system: "arithmetic", threads: threads, opsPerThread: options.ops(20_000_000),
                    repetitions: options.repetitions
                ) { t, range in
                    var x = UInt64(t + 1)
                    for i in range { x = x &* 6_364_136_223_846_793_005 &+ UInt64(truncatingIfNeeded: i) }
                    return x == 0 ? 1 : 0  // depends on every step, so the loop is not removed; ~0 bytes
                }
            }
        }
    ]
}
