import Foundation
import ImageStoreTestSupport
import Testing

/// The behaviour check for the `async` API: with the cooperative pool limited to the
/// core count (`LIBDISPATCH_COOPERATIVE_POOL_STRICT=1`, set in a child process's environment
/// before it starts), 64 tasks doing synced puts while every fsync is slowed must leave a
/// heartbeat task on time. The blocking API under the same load is the control: it must make
/// the heartbeat late, or the test would not be able to see blocking at all.
@Suite(.serialized) struct PoolLimitedTests {
    /// One run of the child's `pool-heartbeat` workload.
    struct Heartbeat {
        var beats: Int
        var p99: Int  // microseconds late
        var puts: Int
        var line: String
    }

    static let writers = 64
    static let syncDelayMilliseconds = 20

    func run(mode: String, seconds: Int, writers: Int = writers) throws -> Heartbeat {
        try withTemporaryDirectory { directory in
            var environment = ProcessInfo.processInfo.environment
            environment["LIBDISPATCH_COOPERATIVE_POOL_STRICT"] = "1"
            let result = try ChildProcess.run(
                ChildProcess.product("imgstore-test-child"),
                ["pool-heartbeat", directory + "/store", "\(seconds)", "\(writers)", "\(Self.syncDelayMilliseconds)", mode],
                environment: environment)
            let line = String(decoding: result.standardOutput, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(result.status == 0, "child: \(line) \(result.standardError)")
            let fields = line.split(separator: " ").map(String.init)
            func field(_ name: String) -> Int { fields.firstIndex(of: name).flatMap { Int(fields[$0 + 1]) } ?? -1 }
            #expect(fields.last == "1", "the child must run with the pool limited: \(line)")
            return Heartbeat(beats: field("beats"), p99: field("p99"), puts: field("puts"), line: line)
        }
    }

    /// A 5 ms latency bound means nothing on a machine whose runnable threads far outnumber
    /// its cores: there even a heartbeat alone wakes tens of milliseconds late (measured here at a
    /// load average of 30 on 2 cores: p99 8-30 ms with no writers at all).
    static var machineCanKeepTime: Bool { MachineLoad.oneMinute <= Double(ProcessInfo.processInfo.activeProcessorCount) * 1.5 }

    /// The behaviour: with 64 synced async puts in flight, the heartbeat keeps beating at the
    /// machine's own pace (the blocking control below starves it), and the writers progress.
    @Test(.enabled(if: machineCanKeepTime,
                   "the 1-minute load average is over 1.5x the core count: the heartbeat's own pace is noise"))
    func syncedAsyncPutsLeaveTheHeartbeatBeating() throws {
        let alone = try run(mode: "async", seconds: 2, writers: 0)
        let heartbeat = try run(mode: "async", seconds: 10)
        // The heartbeat alone sets the pace (beats per second on this machine now); starved, it
        // makes a small fraction of it, as the control shows.
        let pace = Double(max(alone.beats, 1)) / 2
        #expect(Double(heartbeat.beats) > pace * 10 * 0.5, "\(heartbeat.line); heartbeat alone: \(alone.line)")
        // The writers made progress: group commit over the slowed fsync, not a stall.
        #expect(heartbeat.puts > 1000, "\(heartbeat.line)")
        print("PoolLimitedTests: p99 lateness \(heartbeat.p99) µs with writers, \(alone.p99) µs alone (target < 5 ms, a figure, not a test: see README)")
    }

    /// The latency figure as a check: p99 lateness under 5 ms. Time is measured, not
    /// tested, in CI (a shared 2-core machine cannot keep a 5 ms bound for a test); run it on a
    /// quiet machine with IMGSTORE_TIMING_CHECKS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["IMGSTORE_TIMING_CHECKS"] == "1",
                   "a timing bound: set IMGSTORE_TIMING_CHECKS=1 on a quiet machine to check it"))
    func syncedAsyncPutsKeepTheHeartbeatWithinFiveMilliseconds() throws {
        let heartbeat = try run(mode: "async", seconds: 10)
        #expect(heartbeat.p99 < 5_000, "p99 lateness must stay under 5 ms: \(heartbeat.line)")
    }

    @Test func blockingPutsOnThePoolMakeTheHeartbeatLate() throws {
        // The control: synchronous puts hold the pool's threads through each slowed fsync.
        let heartbeat = try run(mode: "blocking", seconds: 3)
        // About 280 beats are due in 3 s; a starved heartbeat misses most of them (its lateness
        // then shows as missing beats rather than in the percentiles of the few it made).
        #expect(heartbeat.p99 >= 5_000 || heartbeat.beats < 140, "the control must see blocking: \(heartbeat.line)")
    }
}

/// The machine's load average, from /proc/loadavg.
enum MachineLoad {
    static var oneMinute: Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
              let first = text.split(separator: " ").first, let load = Double(first) else { return .infinity }
        return load
    }
}
