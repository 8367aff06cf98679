import Foundation
#if canImport(Glibc)
import Glibc
#endif
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
            configuration.sweepPeriod = nil
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                for n in 0..<10 { try store.put(blob(n), for: "https://x.test/\(n)", expiry: n < 6 ? .after(.seconds(10)) : .never) }
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
                #expect(leftovers(store) == [], "the next open removed the killed compaction's copy")
                reopened.close()
            }
        }
    }

    // MARK: - Where the copy goes, and what a killed compaction leaves

    /// Names of compaction copies in the store directory and next to it.
    private func leftovers(_ store: String) -> [String] {
        let parent = (store as NSString).deletingLastPathComponent
        let inside = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        let beside = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        return (inside + beside).filter { $0.contains(".compacting-") }.sorted()
    }

    /// The pid of a process that has exited (and been reaped).
    private func deadPID() throws -> pid_t {
        let child = try ChildProcess.Collecting("/usr/bin/env", ["true"])
        while child.isRunning { usleep(1000) }
        return child.processIdentifier
    }

    @Test func theNextOpenRemovesCopiesOfKilledCompactionsAndKeepsThoseOfLiveOnes() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            try ImageStore(path: store, configuration: makeConfiguration()).close()
            let dead = try deadPID()
            let live = try ChildProcess.Collecting("/usr/bin/env", ["sleep", "600"])
            defer { live.kill() }
            let deadCopy = store + "/data.mdb.compacting-\(dead)"
            let liveCopy = store + "/data.mdb.compacting-\(live.processIdentifier)"
            let oldStyleCopy = store + ".compacting-\(dead)"  // earlier builds wrote a sibling directory
            for file in [deadCopy, liveCopy] { try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: file)) }
            try FileManager.default.createDirectory(atPath: oldStyleCopy, withIntermediateDirectories: false)
            try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: oldStyleCopy + "/data.mdb"))
            let reopened = try ImageStore(path: store, configuration: makeConfiguration())
            #expect(leftovers(store) == ["data.mdb.compacting-\(live.processIdentifier)"])
            reopened.close()
            live.kill()
            _ = try ImageStore.compact(path: store, configuration: makeConfiguration())
            #expect(leftovers(store) == [], "a compaction removes them too, once their process is gone")
        }
    }

    /// A stale reader slot (its process was killed inside a read transaction) made the owning
    /// process's compaction refuse until it reopened the store.
    @Test func aStaleReaderSlotDoesNotStopCompaction() throws {
        try withTemporaryStore { store throws in
            for n in 0..<100 { try store.put(blob(n), for: "https://x.test/\(n)") }
            for n in 0..<100 where n % 4 != 0 { try store.remove("https://x.test/\(n)") }
            let reader = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-reader", store.path])
            #expect(reader.wait(for: "ready"))
            reader.kill()
            let report = try store.compact()
            #expect(report.bytesAfter < report.bytesBefore, "\(report)")
            #expect(try store.statistics().entryCount == 25)
        }
    }

    /// The store directory is a mount point: the copy must be written inside it, or the rename
    /// fails with EXDEV after the whole copy was written.
    @Test(.enabled(if: TemporaryMount.isAvailable, TemporaryMount.unavailableReason))
    func aStoreDirectoryThatIsAMountPointCompacts() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            try TemporaryMount.tmpfs(at: store) {
                let s = try ImageStore(path: store, configuration: makeConfiguration())
                for n in 0..<200 { try s.put(blob(n), for: "https://x.test/\(n)") }
                for n in 0..<200 where n % 10 != 0 { try s.remove("https://x.test/\(n)") }
                s.close()
                let report = try ImageStore.compact(path: store, configuration: makeConfiguration())
                #expect(report.bytesAfter * 3 < report.bytesBefore, "\(report)")
                let reopened = try ImageStore(path: store, configuration: makeConfiguration())
                defer { reopened.close() }
                #expect(try reopened.statistics().entryCount == 20)
                #expect(try reopened.get("https://x.test/190")?.data == blob(190))
                #expect(leftovers(store) == [])
            }
        }
    }
}
