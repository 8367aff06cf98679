import Foundation
import Synchronization

/// One benchmark case: a name (`area.what`, filtered by prefix on the command line) and a function that measures
/// every system on it in one run, imgstore's first.
struct BenchmarkCase: Sendable {
    var name: String
    var run: @Sendable (_ options: BenchmarkOptions) -> [Measurement]
}

struct BenchmarkOptions: Sendable {
    /// Fewer operations, for a smoke run.
    var quick = false
    /// Timed runs per measurement; the fastest is kept, since interference from other processes only slows a run.
    var repetitions = 3

    /// Rotating rounds of the rows whose runs spread most (`put.async`, `recover.256MiB`), each row's median kept:
    /// five, one in quick mode.
    var widerRounds: Int { quick ? 1 : 5 }

    /// Bytes of images the store cases put (each put measurement puts all of them) and read.
    var datasetBytes = 256 << 20
    /// The only systems the put cases measure, when set (`--systems`).
    var putSystems: Set<String>?
    /// The put cases' thread counts, when `--put-threads` names some (else each case's own).
    var putThreadCounts: [Int]?
    /// Where stores are created; removed at the end of the run.
    var directory = NSTemporaryDirectory() + "imgstore-bench-\(getpid())"

    /// Scales a full-run operation count down in quick mode.
    func ops(_ full: Int) -> Int { quick ? max(1, full / 10) : full }

    /// An empty directory `name` under `directory`.
    func scratch(_ name: String) -> String {
        let path = directory + "/" + name
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Deletes a scratch directory, then flushes the page cache's dirty pages (untimed), so one measurement's
    /// writeback does not land in the next one's time.
    func removeScratch(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
        Glibc.sync()
    }
}

/// What one system did on one case.
struct Measurement: Sendable {
    var caseName: String
    var system: String
    var threads: Int
    var operations: Int
    /// Payload bytes moved (for the memory tier: the cost of the values served or stored); 0 prints as "-".
    var bytes: Int
    var seconds: Double
    /// Per-operation latencies in nanoseconds, one sample per timed batch (the batch time divided by its size).
    var latencies: [Double]
    /// CPU time the measuring threads got, summed: `cpuSeconds / seconds` is how many cores the run really had.
    var cpuSeconds: Double = 0
    /// For hit-ratio cases: hits / lookups; the ratio column then compares hit ratios instead of throughput.
    var hitRatio: Double? = nil

    var opsPerSecond: Double { Double(operations) / seconds }
    var megabytesPerSecond: Double { Double(bytes) / seconds / 1_048_576 }
    var p50: Double { percentile(0.50) }
    var p99: Double { percentile(0.99) }

    /// Nearest-rank percentile of `latencies`.
    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

/// Timing: monotonic clock, threads started together, operations timed in batches so the clock read does not
/// dominate sub-microsecond operations.
enum BenchmarkRunner {
    static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Runs `body` on `threads` threads, each over operation indices `0..<opsPerThread` in batches of `batch`, after
    /// an untimed warm-up of one tenth of the operations (unless `warmUp` is false: replays that measure state), and
    /// keeps the fastest of `repetitions` runs. `body(thread, range)` performs the operations of `range` and returns
    /// the payload bytes they moved. `finish`, when given, runs after every thread is done and inside the timed span
    /// (e.g. applying a write-ahead log, so a put rate is sustained). With `batchLatency`, a latency sample is the
    /// whole batch's time (for systems that acknowledge a batch at once, so every operation in it waited that long);
    /// otherwise it is the batch time divided by its size.
    static func measure(
        _ caseName: String, system: String, threads: Int, opsPerThread: Int, batch: Int = 100, warmUp: Bool = true,
        repetitions: Int = 1, batchLatency: Bool = false, finish: (@Sendable () -> Void)? = nil,
        body: @escaping @Sendable (_ thread: Int, _ range: Range<Int>) -> Int
    ) -> Measurement {
        var best: Measurement?
        for _ in 0..<max(1, repetitions) {
            let m = measureOnce(
                caseName, system: system, threads: threads, opsPerThread: opsPerThread, batch: batch, warmUp: warmUp,
                batchLatency: batchLatency, finish: finish, body: body)
            if best == nil || m.seconds < best!.seconds { best = m }
        }
        return best!
    }

    static func measureOnce(
        _ caseName: String, system: String, threads: Int, opsPerThread: Int, batch: Int, warmUp: Bool,
        batchLatency: Bool = false, finish: (@Sendable () -> Void)? = nil,
        body: @escaping @Sendable (_ thread: Int, _ range: Range<Int>) -> Int
    ) -> Measurement {
        // Warm-up (caches, page faults, branch predictors), same shape as the timed run.
        if warmUp { runThreads(threads) { t in _ = body(t, 0..<max(1, opsPerThread / 10)) } }

        let results = Mutex<[(bytes: Int, latencies: [Double], cpu: Double)]>([])
        let started = Atomic<Int>(0)
        let wallStart = Mutex<UInt64>(0)
        let elapsed = runThreads(threads) { t in
            var latencies: [Double] = []
            latencies.reserveCapacity(opsPerThread / batch + 1)
            var bytes = 0
            // Spin until every thread is ready, so the threads really overlap.
            started.add(1, ordering: .acquiringAndReleasing)
            while started.load(ordering: .acquiring) < threads {}
            if t == 0 { wallStart.withLock { $0 = nanoseconds() } }
            let cpuStart = threadCPUNanoseconds()
            var i = 0
            while i < opsPerThread {
                let end = min(i + batch, opsPerThread)
                let t0 = nanoseconds()
                bytes &+= body(t, i..<end)
                latencies.append(Double(nanoseconds() - t0) / Double(batchLatency ? 1 : end - i))
                i = end
            }
            let cpu = Double(threadCPUNanoseconds() - cpuStart) / 1e9
            results.withLock { $0.append((bytes, latencies, cpu)) }
        }
        _ = elapsed
        finish?()
        let end = nanoseconds()
        let seconds = Double(end - wallStart.withLock { $0 }) / 1e9
        let all = results.withLock { $0 }
        return Measurement(
            caseName: caseName, system: system, threads: threads, operations: opsPerThread * threads,
            bytes: all.reduce(0) { $0 + $1.bytes }, seconds: seconds, latencies: all.flatMap(\.latencies),
            cpuSeconds: all.reduce(0) { $0 + $1.cpu })
    }

    /// Measures each of `systems` `rounds` times with `run`, in rounds that rotate their order (round r starts with
    /// system r), and keeps each one's median run, in `systems`' order. For the put cases: a put run is sped up by
    /// chance as well as slowed (the page cache's writeback, the host's disk), so the fastest run would keep outliers,
    /// and under load the later systems of a round tend to win, so none may always run first or last. Every run's
    /// rate goes to stderr, labelled `label` and the system.
    static func medianOfRotatingRounds<System>(
        _ label: String, systems: [System], named name: (System) -> String, rounds: Int, run: (System) -> Measurement
    ) -> [Measurement] {
        var runs = Array(repeating: [Measurement](), count: systems.count)
        for round in 0..<max(1, rounds) {
            for offset in systems.indices {
                let index = (offset + round) % systems.count
                runs[index].append(run(systems[index]))
            }
        }
        return zip(systems, runs).map { system, all in
            // A run of one operation (a recovery) by its time; a rate of 1 or 2 ops/s would say little.
            let single = all.allSatisfy { $0.operations == 1 }
            let rates = all.map { String(format: "%.0f", single ? $0.seconds * 1e3 : $0.opsPerSecond) }.joined(separator: ", ")
            FileHandle.standardError.write(Data("    \(label) \(name(system)): runs of \(rates) \(single ? "ms" : "ops/s")\n".utf8))
            return all.sorted { $0.seconds < $1.seconds }[all.count / 2]
        }
    }

    /// CPU time consumed by the calling thread.
    static func threadCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// The 1-minute load average, or nil if unknown: measurements on a busy machine understate multi-thread scaling.
    static func loadAverage() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Double($0) }
    }

    /// Runs `body(0..<n)` on `n` threads and waits for all; returns the wall time in seconds.
    @discardableResult
    static func runThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) -> Double {
        let t0 = nanoseconds()
        let group = DispatchGroup()
        for t in 0..<n {
            group.enter()
            let thread = Thread {
                body(t)
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return Double(nanoseconds() - t0) / 1e9
    }
}
