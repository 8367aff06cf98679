import Foundation
import ImageStore
#if canImport(Glibc)
import Glibc
#endif

/// The writer of the power-loss test (`Tests/ImageStoreTests/PowerLoss/`): works on stores
/// under a directory on a file system the test shuts down, and reports every step on stdout
/// (a pipe, so outside the file system that is cut) before and after it happens:
///
///   op I put STORE URL SIZE     op I is about to put (or `rm STORE URL`) in STORE
///   ack I T [CHECKSUM]          op I was acknowledged at time T (CLOCK_MONOTONIC, ns)
///   durable STORE I T           every op of STORE before op I is durable (a checkpoint or
///                               a compaction returned)
///   begin WORK STORE            WORK (create, checkpoint, compact) starts, and `end WORK STORE`
///   error T MESSAGE             a call failed (after the cut, every call does); it then waits
///
/// Workloads: `puts-removes` (one store, 70 % puts of new URLs, 30 % removes of live ones),
/// `checkpoint` and `compaction` (the same, with a checkpoint or a compaction every 40 ops),
/// `creation` (creates store after store, each with 3 ops, then closes it). It runs until killed.
struct PowerLossWorkload {
    let directory: String
    let durability: Durability
    var random: UInt64
    var next = 0

    init(directory: String, mode: String, seed: UInt64) {
        self.directory = directory
        durability = switch mode {
        case "batched": .batched(within: .milliseconds(50))
        case "none": .none
        default: .sync
        }
        random = seed
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    mutating func draw(_ bound: Int) -> Int {
        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((random >> 33) % UInt64(bound))
    }

    /// Deterministic bytes for op `n`.
    static func blob(_ n: Int, size: Int) -> Data {
        var state = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 | 1
        return Data((0..<size).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        })
    }

    /// One put or remove in `store` (named `name`); `live` holds the URLs put and not removed.
    mutating func step(_ store: ImageStore, name: String, live: inout [String]) throws {
        let index = next
        next += 1
        if live.isEmpty || draw(10) < 7 {
            let url = "https://x.test/\(name)/\(index)"
            let size = 100 + draw(6000)
            say("op \(index) put \(name) \(url) \(size)")
            let info = try store.put(Self.blob(index, size: size), for: url, durability: durability)
            say("ack \(index) \(Self.now()) \(info.checksum)")
            live.append(url)
        } else {
            let url = live.remove(at: draw(live.count))
            say("op \(index) rm \(name) \(url)")
            _ = try store.remove(url, durability: durability)
            say("ack \(index) \(Self.now())")
        }
    }

    mutating func run(_ workload: String) -> Never {
        do {
            switch workload {
            case "creation": try creations()
            case "puts-removes": try steps(every: 0, work: nil)
            case "checkpoint": try steps(every: 40, work: "checkpoint")
            case "compaction": try steps(every: 40, work: "compact")
            default:
                FileHandle.standardError.write(Data("unknown workload \(workload)\n".utf8))
                exit(64)
            }
        } catch {
            say("error \(Self.now()) \(error)")
        }
        hang()
    }

    private mutating func steps(every interval: Int, work: String?) throws {
        let store = try Self.open(directory + "/s")
        say("ready")
        var live: [String] = []
        while true {
            for _ in 0..<max(interval, 1) { try step(store, name: "s", live: &live) }
            guard let work else { continue }
            say("begin \(work) s")
            if work == "compact" { _ = try store.compact() } else { try store.checkpoint() }
            say("end \(work) s")
            say("durable s \(next) \(Self.now())")
        }
    }

    private mutating func creations() throws {
        say("ready")
        for number in 0... {
            let name = "s\(number)"
            say("begin create \(name)")
            let store = try Self.open(directory + "/" + name)
            say("end create \(name)")
            var live: [String] = []
            for _ in 0..<3 { try step(store, name: name, live: &live) }
            try store.checkpoint()  // close() reports nothing, so checkpoint first to know
            say("durable \(name) \(next) \(Self.now())")
            store.close()
        }
    }

    static func open(_ path: String) throws -> ImageStore {
        var configuration = ImageStore.Configuration()
        configuration.validation = .none
        configuration.logSegmentBytes = 256 << 10
        configuration.initialMapSize = 1 << 20
        configuration.sweepPeriod = nil
        return try ImageStore(path: path, configuration: configuration)
    }
}
