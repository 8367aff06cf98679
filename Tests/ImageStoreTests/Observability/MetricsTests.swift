import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// `ImageStore.metrics`: counters and gauges kept as the store runs.
@Suite struct MetricsTests {
    // MARK: - Reads

    @Test func getsAreCountedBySourceWithMissesAndStaleReads() throws {
        let clock = ManualClock()
        try withTemporaryStore(makeConfiguration(clock: clock)) { store in
            let before = store.metrics
            #expect(before.getsFromDisk + before.getsFromMemory + before.getsFromLog + before.misses == 0)
            try store.put(Data(repeating: 7, count: 100), for: "https://x.test/a", expiry: .after(.seconds(60)))
            try store.checkpoint()  // applied: the pending index no longer holds it
            _ = try store.get("https://x.test/a")  // from LMDB, filling the memory tier
            _ = try store.get("https://x.test/a")  // from memory
            _ = try store.get("https://x.test/missing")
            clock.advance(by: 61)
            _ = try store.get("https://x.test/a")  // expired: a miss
            let stale = try store.get("https://x.test/a", allowingStale: true)
            #expect(stale?.isStale == true)
            let metrics = store.metrics
            #expect(metrics.getsFromDisk + metrics.getsFromMemory == 3)
            #expect(metrics.getsFromDisk >= 1 && metrics.getsFromMemory >= 1)
            #expect(metrics.misses == 2)
            #expect(metrics.staleReads == 1)
        }
    }

    @Test func aGetOfAnUnappliedPutIsCountedAsFromTheLog() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(applyLog: false))
            try store.put(Data(repeating: 1, count: 10), for: "https://x.test/a")
            _ = try store.get("https://x.test/a")
            #expect(store.metrics.getsFromLog == 1)
            #expect(store.metrics.unappliedRecords == 1)
            store.abandonForTesting()
        }
    }

    // MARK: - Writes

    @Test func putsRemovesAndRejectionsByReasonAreCounted() throws {
        try withTemporaryStore(makeConfiguration(validation: .rejectInvalid)) { store in
            let png = try Fixtures.image("shapes.png")
            try store.put(png, for: "https://x.test/a")
            try store.put(png, for: "https://x.test/b")
            #expect(throws: ImageStoreError.self) { try store.put(Data("not an image".utf8), for: "https://x.test/c") }
            #expect(throws: ImageStoreError.self) { try store.put(png.prefix(png.count / 2), for: "https://x.test/d") }
            #expect(try store.remove("https://x.test/a"))
            #expect(try !store.remove("https://x.test/never"))
            try store.checkpoint()
            let metrics = store.metrics
            #expect(metrics.puts == 2)
            #expect(metrics.removes == 1)
            #expect(metrics.validationRejections == ["unknownFormat": 1, "truncated": 1])
            #expect(metrics.entries == 1)
            #expect(metrics.logicalBytes == png.count)
            #expect(metrics.fileBytes > 0)
        }
    }

    // MARK: - Log

    @Test func groupCommitsAndFsyncsFillTheirHistograms() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            for n in 0..<100 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
            try store.checkpoint()
            let metrics = store.metrics
            let batches = metrics.groupCommitBatchRecords
            #expect(batches.count >= 1 && batches.count <= 100)
            #expect(batches.sum == 100, "every record was in one batch")
            #expect(batches.buckets.last?.count == batches.count, "no batch above 4096 records")
            #expect(metrics.logFsyncSeconds.count >= 1, "each sync put waited for an fsync")
            #expect(metrics.checkpoints >= 1, "4 KiB segments rolled and were checkpointed")
            #expect(metrics.unappliedRecords == 0 && metrics.unappliedBytes == 0 && metrics.applierLag == .zero)
            #expect(metrics.logSegments >= 1)
            store.close()
        }
    }

    @Test func aReadOnlyStoreReportsItsSizes() throws {
        try withTemporaryDirectory { directory in
            let writer = try ImageStore(path: directory, configuration: makeConfiguration())
            try writer.put(Data(repeating: 1, count: 50), for: "https://x.test/a")
            writer.close()
            var configuration = makeConfiguration()
            configuration.readOnly = true
            let reader = try ImageStore(path: directory, configuration: configuration)
            #expect(reader.metrics.entries == 1 && reader.metrics.logicalBytes == 50)
            #expect(reader.metrics.logSegments == 0)
            reader.close()
        }
    }

    // MARK: - Striped counters

    @Test func readCountersLoseNothingUnderConcurrentReaders() throws {
        try withTemporaryStore { store in
            try store.put(Data(repeating: 3, count: 64), for: "https://x.test/hot")
            try store.checkpoint()
            let threads = 8, reads = 2_000
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<reads {
                    do { _ = try store.get("https://x.test/hot") } catch { Issue.record(error) }
                }
            }
            let metrics = store.metrics
            #expect(metrics.getsFromMemory + metrics.getsFromDisk == threads * reads)
        }
    }
}
