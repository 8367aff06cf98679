import Foundation
import ImageStore
import Synchronization

// imgstore-test-child pool-heartbeat DIR SECONDS WRITERS SYNC_DELAY_MS MODE
//
// The pool-limited test's workload (`PoolLimitedTests`), run in a child process because
// `LIBDISPATCH_COOPERATIVE_POOL_STRICT=1` must be in the environment when the process starts.
// WRITERS tasks put synced entries for SECONDS while every log fsync is slowed by
// SYNC_DELAY_MS (a fault injector in the log's file layer); one more task beats every 10 ms and
// records how late each beat wakes. MODE `async` writes with `store.async.put`, `blocking`
// with the synchronous `put` (the control: it must be late). Prints
// "beats N p50 X p99 Y max Z puts P pool POOL" (lateness in microseconds) and exits 0;
// exits 1 when a put fails.

/// The real log file layer, with every `sync` slowed down first.
final class SlowSyncLogFileSystem: LogFileSystem {
    let real = PosixLogFileSystem()
    let delay: useconds_t

    init(delayMilliseconds: Int) { delay = useconds_t(delayMilliseconds * 1000) }

    func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        SlowSyncLogFile(real: try real.open(path, preallocate: preallocate), delay: delay)
    }
    func rename(_ from: String, to: String) throws(LogIOError) { try real.rename(from, to: to) }
    func remove(_ path: String) throws(LogIOError) { try real.remove(path) }
    func syncDirectory(_ directory: String) throws(LogIOError) { try real.syncDirectory(directory) }
    func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] { try real.contentsOfDirectory(directory) }
}

final class SlowSyncLogFile: LogFile {
    let real: any LogFile
    let delay: useconds_t

    init(real: any LogFile, delay: useconds_t) {
        self.real = real
        self.delay = delay
    }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) { try real.write(parts, at: offset) }
    func sync() throws(LogIOError) {
        usleep(delay)
        try real.sync()
    }
    func readAll() throws(LogIOError) -> [UInt8] { try real.readAll() }
    func close() { real.close() }
}

/// Lateness samples of the heartbeat, in microseconds.
final class Beats: @unchecked Sendable {
    // @unchecked Sendable: only the heartbeat task appends; the main thread reads after it ended.
    var lateness: [Int] = []
}

func poolHeartbeat(directory: String, seconds: Int, writers: Int, syncDelay: Int, mode: String) throws -> Never {
    var configuration = ImageStore.Configuration()
    configuration.validation = .none
    configuration.sweepPeriod = nil
    configuration.logFileSystem = SlowSyncLogFileSystem(delayMilliseconds: syncDelay)
    let store = try ImageStore(path: directory, configuration: configuration)
    let payload = blob(1, seed: 7)
    let beats = Beats()
    let outcome = LockedOutcome()
    let done = DispatchSemaphore(value: 0)
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    Task {
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var n = 0
                    while clock.now < deadline {
                        let url = "https://pool.test/\(writer)/\(n % 64)"
                        do {
                            if mode == "blocking" {
                                try store.put(payload, for: url, durability: .sync)
                            } else {
                                try await store.async.put(payload, for: url, durability: .sync)
                            }
                        } catch {
                            outcome.fail("\(error)")
                            return
                        }
                        outcome.countPut()
                        n += 1
                    }
                }
            }
            group.addTask {
                let period = Duration.milliseconds(10)
                // Warm-up: the first beats measure the writers starting, not the steady state.
                try? await Task.sleep(for: .milliseconds(200))
                while clock.now < deadline {
                    let start = clock.now
                    try? await Task.sleep(for: period)  // never cancelled: the group is not
                    let late = (clock.now - start) - period
                    beats.lateness.append(Int(late.components.seconds * 1_000_000 + late.components.attoseconds / 1_000_000_000_000))
                }
            }
        }
        done.signal()
    }
    done.wait()
    store.close()
    if let failure = outcome.failure {
        say("put failed: \(failure)")
        exit(1)
    }
    let sorted = beats.lateness.sorted()
    func percentile(_ p: Double) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    let pool = ProcessInfo.processInfo.environment["LIBDISPATCH_COOPERATIVE_POOL_STRICT"] ?? "unset"
    say("beats \(sorted.count) p50 \(percentile(0.5)) p99 \(percentile(0.99)) max \(sorted.last ?? 0) puts \(outcome.puts) pool \(pool)")
    exit(0)
}

/// The writers' put count and first failure.
final class LockedOutcome: Sendable {
    private let state = Mutex<(puts: Int, failure: String?)>((0, nil))
    var puts: Int { state.withLock { $0.puts } }
    var failure: String? { state.withLock { $0.failure } }
    func countPut() { state.withLock { $0.puts += 1 } }
    func fail(_ reason: String) { state.withLock { if $0.failure == nil { $0.failure = reason } } }
}
