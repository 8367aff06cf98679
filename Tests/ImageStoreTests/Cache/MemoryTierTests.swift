import Foundation
import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing

/// The memory tier in front of LMDB: reads through it, and never a byte older than the disk.
@Suite struct MemoryTierTests {
    private func configuration(clock: ManualClock = ManualClock(), memory: Int = 8 << 20) -> ImageStore.Configuration {
        var configuration = makeConfiguration(clock: clock)
        configuration.memoryCostLimit = memory
        configuration.sweepPeriod = nil
        return configuration
    }

    @Test func aSecondReadIsServedFromMemory() throws {
        try withTemporaryStore(configuration()) { store throws in
            try store.put(Data([1, 2, 3]), for: "https://x.test/a")
            _ = try store.statistics()  // applied to LMDB
            #expect(try store.get("https://x.test/a")?.source == .disk)
            let second = try #require(try store.get("https://x.test/a"))
            #expect(second.source == .memory)
            #expect(second.data == Data([1, 2, 3]))
            let stats = try store.statistics()
            #expect(stats.memoryEntries == 1 && stats.memoryBytes == 3 && stats.memoryHits >= 1)
        }
    }

    @Test func aTurnedOffMemoryTierServesEverythingFromDisk() throws {
        try withTemporaryStore(configuration(memory: 0)) { store throws in
            try store.put(Data([1]), for: "https://x.test/a")
            _ = try store.statistics()
            for _ in 0..<3 { #expect(try store.get("https://x.test/a")?.source == .disk) }
            #expect(try store.statistics().memoryCostLimit == 0)
        }
    }

    /// The memory tier hashes a key by its LMDB key hash (`KeyHash`), so keys whose hashes
    /// collide share one slot chain there too: each must still be served its own bytes.
    @Test func entriesWhoseKeyHashesCollideAreEachServedTheirOwnBytesFromMemory() throws {
        var colliding = configuration()
        colliding.keyHasher = { _ in [UInt8](repeating: 0xAB, count: 16) }
        try withTemporaryStore(colliding) { store throws in
            let urls = (0..<4).map { "https://x.test/\($0)" }
            for (n, url) in urls.enumerated() { try store.put(Data([UInt8(n)]), for: url) }
            _ = try store.statistics()  // applied to LMDB
            for (n, url) in urls.enumerated() {
                #expect(try store.get(url)?.source == .disk)
                let again = try #require(try store.get(url))
                #expect(again.source == .memory && again.data == Data([UInt8(n)]), "\(url)")
            }
            try store.remove(urls[1])
            _ = try store.statistics()
            #expect(try store.get(urls[1]) == nil)
            for n in [0, 2, 3] { #expect(try store.get(urls[n])?.data == Data([UInt8(n)]), "\(urls[n])") }
            #expect(try store.statistics().memoryEntries == 3)
        }
    }

    // MARK: - Coherence with the durable tier

    @Test func overwriteRemoveAndRemoveAllAreNeverFollowedByOldBytes() throws {
        try withTemporaryStore(configuration()) { store throws in
            let url = "https://x.test/a"
            try store.put(Data([1]), for: url)
            _ = try store.statistics()
            _ = try store.get(url); _ = try store.get(url)  // now in memory
            try store.put(Data([2]), for: url)
            #expect(try store.get(url)?.data == Data([2]), "overwrite")
            _ = try store.statistics()
            #expect(try store.get(url)?.data == Data([2]), "overwrite, once applied")
            try store.remove(url)
            #expect(try store.get(url) == nil, "remove")
            _ = try store.statistics()
            #expect(try store.get(url) == nil, "remove, once applied")
            try store.put(Data([3]), for: url)
            _ = try store.statistics()
            _ = try store.get(url); _ = try store.get(url)
            try store.removeAll()
            #expect(try store.get(url) == nil, "remove-all")
            _ = try store.statistics()
            #expect(try store.get(url) == nil, "remove-all, once applied")
        }
    }

    @Test func memoryEntriesCarryTheDiskExpiry() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock)) { store throws in
            try store.put(Data([1]), for: "https://x.test/a", expiry: .after(.seconds(30)))
            _ = try store.statistics()
            _ = try store.get("https://x.test/a")
            #expect(try store.get("https://x.test/a")?.source == .memory)
            clock.advance(by: 30)
            #expect(try store.get("https://x.test/a") == nil, "expired in memory as on disk")
            #expect(try store.get("https://x.test/a", allowingStale: true)?.isStale == true)
            try store.sweepExpired()
            #expect(try store.get("https://x.test/a", allowingStale: true) == nil, "swept from both tiers")
        }
    }

    @Test func budgetEvictionsDropMemoryEntriesToo() throws {
        let clock = ManualClock()
        var config = configuration(clock: clock)
        config.maxDiskBytes = 1 << 20
        config.sweepBatchSize = 4
        try withTemporaryStore(config) { store throws in
            var random = SeededGenerator(seed: 9)
            try store.put(random.bytes(60_000), for: "https://x.test/first")
            _ = try store.statistics()
            _ = try store.get("https://x.test/first")
            for n in 0..<40 {
                clock.advance(by: 1)
                try store.put(random.bytes(60_000), for: "https://x.test/\(n)")
            }
            _ = try store.statistics()
            #expect(try store.get("https://x.test/first") == nil, "evicted on disk, so gone from memory")
        }
    }

    // MARK: - Concurrency

    /// A reader pauses in `fill` after reading the old bytes from LMDB; a put lands and is
    /// applied (so the pending index no longer shadows the key); the reader inserts. At no
    /// point after that may a get return the reader's old bytes.
    @Test func aFillThatRacedAnAppliedPutNeverServesItsOldBytes() throws {
        let gate = FillGate()
        var config = configuration()
        config.memoryFillHook = { phase, _ in gate.reached(phase) }
        try withTemporaryStore(config) { store throws in
            let url = "https://x.test/raced"
            try store.put(Data([1]), for: url)
            _ = try store.statistics()  // applied to LMDB; memory is empty
            gate.arm()
            let reader = startThreads(1) { _ in _ = try? store.get(url) }
            try #require(gate.waitUntilPaused(), "the reader reached fill")  // it read [1] from LMDB
            try store.put(Data([2]), for: url)
            _ = try store.statistics()  // applied: LMDB has [2], the memory tier was invalidated
            gate.resume()
            try #require(gate.waitUntilPaused(), "the reader finished its insert step")
            let seen = try store.get(url)?.data
            gate.resume()
            reader.wait()
            #expect(seen == Data([2]), "a get after the put was applied returned \(seen.map { Array($0) } ?? [])")
            #expect(try store.get(url)?.data == Data([2]))
            #expect(try store.get(url)?.data == Data([2]))
        }
    }


    @Test func aWriterAlwaysReadsItsOwnLatestWriteWhileReadersFillMemory() throws {
        try withTemporaryStore(configuration()) { store throws in
            let url = "https://x.test/hot"
            try store.put(Data([0, 0]), for: url)
            let stop = Atomic<Bool>(false)
            let group = startThreads(3) { _ in
                while !stop.load(ordering: .relaxed) { _ = try? store.get(url) }
            }
            var stale = 0
            for version in 1...300 {
                let bytes = Data([UInt8(version & 0xFF), UInt8(version >> 8)])
                try store.put(bytes, for: url)
                for _ in 0..<3 where try store.get(url)?.data != bytes { stale += 1 }
            }
            stop.store(true, ordering: .relaxed)
            group.wait()
            #expect(stale == 0, "reads after a put returned older bytes \(stale) times")
            _ = try store.statistics()
            #expect(try store.get(url)?.data == Data([UInt8(300 & 0xFF), UInt8(300 >> 8)]))
        }
    }
}

/// Pauses the first fill after `arm()` twice: before its insert and after it, each until
/// `resume()`. Other fills (the test thread's own) pass straight through.
private final class FillGate: Sendable {
    private enum Step: Int { case off, armed, pausedBefore, inserting, pausedAfter, done }
    private let step = Atomic<Int>(Step.off.rawValue)
    private let paused = DispatchSemaphore(value: 0)
    private let go = DispatchSemaphore(value: 0)

    func arm() { step.store(Step.armed.rawValue, ordering: .sequentiallyConsistent) }

    func reached(_ phase: MemoryFillPhase) {
        let (from, to): (Step, Step) = phase == .beforeInsert ? (.armed, .pausedBefore) : (.inserting, .pausedAfter)
        // Only the armed fill pauses; every other fill passes through.
        if step.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .sequentiallyConsistent).exchanged {
            paused.signal()
            go.wait()
            step.store((to == .pausedBefore ? Step.inserting : Step.done).rawValue, ordering: .sequentiallyConsistent)
        }
    }

    /// False when the reader never got there (a generous guard against a hang, not a timing).
    func waitUntilPaused() -> Bool { paused.wait(timeout: .now() + 60) == .success }
    func resume() { go.signal() }
}
