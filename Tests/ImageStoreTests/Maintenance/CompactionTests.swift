import Foundation
import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing

@Suite struct CompactionTests {
    private func blob(_ n: Int) -> Data { Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ n) }) }

    @Test func afterDeletingNinetyPercentTheFileShrinksToAFreshStoresSize() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            let fresh = directory + "/fresh"
            let live = Set(stride(from: 0, to: 400, by: 10))
            do {
                let s = try ImageStore(path: store, configuration: makeConfiguration())
                for n in 0..<400 { try s.put(blob(n), for: "https://x.test/\(n)") }
                for n in 0..<400 where !live.contains(n) { try s.remove("https://x.test/\(n)") }
                s.close()
                let f = try ImageStore(path: fresh, configuration: makeConfiguration())
                for n in live.sorted() { try f.put(blob(n), for: "https://x.test/\(n)") }
                f.close()
            }
            let freshSize = try ImageStore.compact(path: fresh, configuration: makeConfiguration(), options: .init(dryRun: true)).bytesBefore
            let dry = try ImageStore.compact(path: store, configuration: makeConfiguration(), options: .init(dryRun: true))
            #expect(dry.bytesAfter < dry.bytesBefore)
            let report = try ImageStore.compact(path: store, configuration: makeConfiguration())
            #expect(report.bytesBefore > 5 * report.bytesAfter, "\(report)")
            #expect(Double(report.bytesAfter) <= Double(freshSize) * 1.10, "compacted \(report.bytesAfter) vs fresh \(freshSize)")
            let reopened = try ImageStore(path: store, configuration: makeConfiguration())
            defer { reopened.close() }
            for n in live { #expect(try reopened.get("https://x.test/\(n)")?.data == blob(n)) }
            #expect(try reopened.statistics().entryCount == live.count)
            try checkConsistency(of: reopened)
        }
    }

    @Test func theOwningProcessCompactsWithoutClosingWhileReadersAndAWriterWork() throws {
        try withTemporaryStore { store throws in
            for n in 0..<300 { try store.put(blob(n), for: "https://x.test/\(n)") }
            for n in 0..<300 where n % 5 != 0 { try store.remove("https://x.test/\(n)") }
            _ = try store.statistics()
            let stop = Atomic<Bool>(false)
            let wrong = Atomic<Int>(0)
            let reads = Atomic<Int>(0)
            let readers = startThreads(2) { index in
                var n = index * 5
                while !stop.load(ordering: .relaxed) {
                    n = (n + 5) % 300
                    if (try? store.get("https://x.test/\(n)"))??.data != blob(n) { wrong.add(1, ordering: .relaxed) }
                    reads.add(1, ordering: .relaxed)
                }
            }
            let writer = startThreads(1) { _ in
                for n in 1000..<1100 { try? store.put(Data([UInt8(n & 0xFF), 1]), for: "https://x.test/late/\(n)") }
            }
            let report = try store.compact()
            writer.wait()
            stop.store(true, ordering: .relaxed)
            readers.wait()
            #expect(report.bytesAfter < report.bytesBefore / 2, "\(report)")
            #expect(wrong.load(ordering: .relaxed) == 0, "every read during compaction returned the right bytes")
            #expect(reads.load(ordering: .relaxed) > 0)
            for n in 1000..<1100 { #expect(try store.get("https://x.test/late/\(n)")?.data == Data([UInt8(n & 0xFF), 1])) }
            #expect(try store.statistics().entryCount == 160)
            try store.put(blob(7), for: "https://x.test/after")
            #expect(try store.get("https://x.test/after")?.data == blob(7))
        }
    }

    @Test func expiredEntriesCanBePurgedFirst() throws {
        let clock = ManualClock()
        try withTemporaryDirectory { directory throws in
            var configuration = makeConfiguration(clock: clock)
            configuration.sweepInterval = nil
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                for n in 0..<10 { try store.put(blob(n), for: "https://x.test/\(n)", ttl: n < 6 ? 10 : ImageStore.never) }
                store.close()
            }
            clock.advance(by: 11)
            let report = try ImageStore.compact(path: directory, configuration: configuration, options: .init(purgeExpired: true))
            #expect(report.expiredPurged == 6)
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            #expect(try store.statistics().entryCount == 4)
        }
    }

    @Test func aStoreAnotherProcessWritesIsRefused() throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", directory])
            defer { _ = holder.kill() }
            #expect(holder.wait(for: "ready"))
            #expect { try ImageStore.compact(path: directory) } throws: { error in
                if case .writerLocked = error as? ImageStoreError { true } else { false }
            }
        }
    }

    /// SIGKILL at random moments of `imgstore-admin compact`: the store always opens, verifies
    /// clean, and holds every entry.
    @Test func aKilledCompactionNeverLeavesABrokenStore() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            do {
                let s = try ImageStore(path: store, configuration: makeConfiguration())
                for n in 0..<300 { try s.put(blob(n), for: "https://x.test/\(n)") }
                for n in 0..<300 where n % 3 != 0 { try s.remove("https://x.test/\(n)") }
                s.close()
            }
            var random = SeededGenerator()
            print("CompactionTests seed \(random.seed)")
            for _ in 0..<12 {
                let child = try ChildProcess.Collecting(ChildProcess.product("imgstore-admin"), ["--store", store, "compact"])
                usleep(UInt32.random(in: 0...40_000, using: &random))
                _ = child.kill()
                let reopened = try ImageStore(path: store, configuration: makeConfiguration())
                #expect(try reopened.verify().problems == [])
                #expect(try reopened.statistics().entryCount == 100)
                #expect(try reopened.get("https://x.test/99")?.data == blob(99))
                reopened.close()
            }
        }
    }
}
