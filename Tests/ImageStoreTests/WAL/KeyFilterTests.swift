import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import LMDB
import Locking
import Synchronization
import Testing

/// The key filter (`KeyFilter`): a writable store answers a miss without a lookup, and never
/// answers "absent" for a key it holds, across opens, crashes, rebuilds and concurrent puts.
@Suite struct KeyFilterTests {
    private static func hash(_ n: Int) -> [UInt8] { Checksum.key("https://x.test/key-\(n)") }

    private static func mayContain(_ filter: KeyFilter, _ hash: [UInt8]) -> Bool {
        hash.withUnsafeBytes { filter.mayContain($0) }
    }

    /// Builds a table of `keys` as the store does (begin, insert, finish).
    private static func build(_ filter: KeyFilter, _ keys: some Collection<Int>) throws {
        let table = try #require(filter.beginRebuild(expectedKeys: keys.count))
        for n in keys { Self.hash(n).withUnsafeBytes { table.insert($0) } }
        filter.finishRebuild(keys: keys.count)
    }

    // MARK: - The filter alone

    @Test func everyKeyInsertedIsMaybeAndMostOthersAreNo() throws {
        let filter = KeyFilter(minimumKeys: 1_000)
        #expect(Self.mayContain(filter, Self.hash(0)), "no table yet: every key may be there")
        try Self.build(filter, 0..<1_000)
        for n in 0..<1_000 { #expect(Self.mayContain(filter, Self.hash(n)), "key \(n)") }
        for n in 1_000..<1_500 { Self.hash(n).withUnsafeBytes { filter.insert($0) } }
        for n in 0..<1_500 { #expect(Self.mayContain(filter, Self.hash(n)), "key \(n)") }
        let falsePositives = (100_000..<200_000).count { Self.mayContain(filter, Self.hash($0)) }
        // 1 500 keys in a table sized for 2 048 at 16 bits each: about 0.1% expected.
        #expect(falsePositives < 1_000, "\(falsePositives) of 100 000 absent keys read as present")
    }

    @Test func aRebuildStartedWhileAnotherRunsIsRefusedAndAnAbandonedOneKeepsTheTable() throws {
        let filter = KeyFilter(minimumKeys: 64)
        try Self.build(filter, 0..<10)
        #expect(filter.beginRebuild(expectedKeys: 10) != nil)
        #expect(filter.beginRebuild(expectedKeys: 10) == nil, "one rebuild at a time")
        filter.abandonRebuild()
        for n in 0..<10 { #expect(Self.mayContain(filter, Self.hash(n))) }
        #expect(filter.builds == 1)
    }

    @Test func aFullTableWantsARebuildAndRetiredTablesAreReused() throws {
        let filter = KeyFilter(minimumKeys: 64)
        #expect(filter.wantsRebuild, "no table yet")
        try Self.build(filter, 0..<10)
        #expect(!filter.wantsRebuild)
        for n in 10..<200 { Self.hash(n).withUnsafeBytes { filter.insert($0) } }
        #expect(filter.wantsRebuild, "200 keys in a table sized for 64")
        // Churn at one size: each rebuild clears the retired table instead of allocating.
        for round in 0..<20 { try Self.build(filter, (round * 50)..<(round * 50 + 50)) }
        #expect(filter.builds == 21)
        // The first build's (sized for 64 keys) and two of the churn's size (100): the published
        // one and the one a rebuild fills, reused in turn.
        #expect(filter.allocated.tables == 3, "\(filter.allocated.tables) tables")
        for n in 950..<1_000 { #expect(Self.mayContain(filter, Self.hash(n))) }
    }

    @Test func aFailedRebuildIsRetriedOnlyOnceAsManyKeysAgainWentIn() throws {
        let filter = KeyFilter(minimumKeys: 64)
        try Self.build(filter, 0..<10)
        for n in 10..<200 { Self.hash(n).withUnsafeBytes { filter.insert($0) } }  // 190 insertions
        #expect(filter.wantsRebuild)
        _ = try #require(filter.beginRebuild(expectedKeys: 200))
        filter.abandonRebuild()  // a scan that failed
        #expect(!filter.wantsRebuild, "retried at once: a store whose scan fails would rescan after every batch")
        for n in 200..<389 { Self.hash(n).withUnsafeBytes { filter.insert($0) } }
        #expect(!filter.wantsRebuild, "189 of 190 insertions since the failure")
        Self.hash(389).withUnsafeBytes { filter.insert($0) }
        #expect(filter.wantsRebuild)
        for n in 0..<390 { #expect(Self.mayContain(filter, Self.hash(n)), "the old table stays complete") }
    }

    /// The store's protocol with real threads: a writer records keys (filter first, then the
    /// "store"), a rebuilder rebuilds from the store without pause (reusing retired tables), and
    /// readers check that every key acknowledged before they look is "maybe".
    @Test func noAcknowledgedKeyReadsAbsentWhileTablesAreRebuiltAndReused() throws {
        let filter = KeyFilter(minimumKeys: 32)
        let stored = LockedValue<[Int]>([])
        let acknowledged = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let misses = Atomic<Int>(0)
        try Self.build(filter, [Int]())
        let rebuilds = 200
        let group = startThreads(4) { role in
            switch role {
            case 0:  // the writer: as PendingIndex.record, under the lock the rebuild starts under
                var n = 0
                // At most 8 000 keys: each rebuild inserts them all again.
                while !done.load(ordering: .acquiring) && n < 8_000 {
                    stored.withLock { keys in
                        Self.hash(n).withUnsafeBytes { filter.insert($0) }
                        keys.append(n)
                    }
                    n += 1
                    acknowledged.store(n, ordering: .releasing)
                }
            case 1:  // the rebuilder: begins under the lock with the keys seen there, then the rest
                defer { done.store(true, ordering: .releasing) }
                // Both conditions, whatever the scheduler does: a loaded machine once let the
                // rebuilds finish before the writer had run at all.
                while filter.builds <= rebuilds || acknowledged.load(ordering: .acquiring) < 2_000 {
                    let started: (KeyFilter.Table, [Int])? = stored.withLock { keys in
                        // Alternate sizes, so tables are both allocated and reused.
                        guard let table = filter.beginRebuild(expectedKeys: keys.count % 3 == 0 ? 16 : 200) else { return nil }
                        return (table, keys)
                    }
                    guard let (table, keys) = started else { continue }
                    for n in keys { Self.hash(n).withUnsafeBytes { table.insert($0) } }
                    filter.finishRebuild(keys: keys.count)
                }
            default:  // readers
                var generator = SeededGenerator(seed: UInt64(role))
                while !done.load(ordering: .acquiring) {
                    let count = acknowledged.load(ordering: .acquiring)
                    guard count > 0 else { continue }
                    // The newest keys: those a rebuild may have started without.
                    let n = max(0, count - 1 - Int(generator.next() % 16))
                    if !Self.mayContain(filter, Self.hash(n)) { misses.add(1, ordering: .relaxed) }
                }
            }
        }
        group.wait()
        #expect(misses.load(ordering: .relaxed) == 0, "acknowledged keys read as absent")
        let total = acknowledged.load(ordering: .acquiring)
        #expect(total >= 2_000 && filter.builds > rebuilds, "\(total) keys written during \(filter.builds) builds")
        #expect((0..<total).allSatisfy { Self.mayContain(filter, Self.hash($0)) })
    }

    // MARK: - Through the store

    private func configuration(minimumKeys: Int = KeyFilter.defaultMinimumKeys,
                               rebuildPause: Duration? = nil) -> ImageStore.Configuration {
        var configuration = makeConfiguration()
        if let rebuildPause {
            // Widens the window between a rebuild's start and its LMDB snapshot, where puts of
            // keys in no table yet must still reach the new table.
            configuration.keyFilterWillScan = { Thread.sleep(forTimeInterval: rebuildPause.seconds) }
        }
        configuration.keyFilterMinimumKeys = minimumKeys
        configuration.memoryCostLimit = 0  // every read past the log goes to the filter and LMDB
        configuration.applierGatherDelay = .zero  // a batch (and a rebuild check) per few puts
        return configuration
    }

    /// Creates a store at `path` holding entries 0..<`count` (one byte each, `https://x.test/N`)
    /// and closes it, so the next open builds its filter from LMDB.
    private func makeClosedStore(at path: String, entries count: Int) throws {
        let store = try ImageStore(path: path, configuration: configuration())
        for n in 0..<count { try store.put(Data([UInt8(n)]), for: "https://x.test/\(n)") }
        store.close()
    }

    @Test func aNeverStoredURLIsAMissCountedAsOneAndStoredOnesAreFoundAfterReopening() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            try makeClosedStore(at: path, entries: 50)

            let reopened = try ImageStore(path: path, configuration: configuration())
            defer { reopened.close() }
            let filter = try #require(reopened.keyFilterForTesting)
            #expect(filter.builds == 1, "built at the open")
            for n in 0..<50 { #expect(try reopened.get("https://x.test/\(n)")?.data == Data([UInt8(n)])) }
            // The filter answered: this URL's bits are clear (checked, so the test shows the filter's path).
            let missing = "https://x.test/never-stored"
            #expect(!Checksum.key(missing).withUnsafeBytes { filter.mayContain($0) })
            let before = try reopened.statistics().misses
            #expect(try reopened.get(missing) == nil)
            #expect(try reopened.info(for: missing) == nil)
            #expect(try !reopened.contains(missing))
            #expect(try reopened.withImage(for: missing) { _, _ in 1 } == nil)
            #expect(try reopened.statistics().misses == before + 2, "get and withImage count a miss")
        }
    }

    /// The filter answers before the memory tier: a lookup there writes its shard's lock, a
    /// cache line that two threads missing at once passed back and forth (`get.miss` at two
    /// threads ran at 0.31-0.36 of raw LMDB's rate in some runs). A URL the store never held
    /// now leaves the memory tier untouched, and entries in memory are still served from it.
    @Test func aURLTheStoreNeverHeldIsAMissThatLeavesTheMemoryTierUntouched() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            try makeClosedStore(at: path, entries: 20)
            var withMemory = configuration()
            withMemory.memoryCostLimit = 1 << 20
            let reopened = try ImageStore(path: path, configuration: withMemory)
            defer { reopened.close() }
            let filter = try #require(reopened.keyFilterForTesting)
            #expect(filter.builds == 1, "built at the open")
            for n in 0..<20 {
                #expect(try reopened.get("https://x.test/\(n)")?.source == .disk)
                let again = try #require(try reopened.get("https://x.test/\(n)"))
                #expect(again.source == .memory && again.data == Data([UInt8(n)]), "\(n) from memory")
            }
            let missing = "https://x.test/never-stored"
            #expect(!Checksum.key(missing).withUnsafeBytes { filter.mayContain($0) }, "the filter's path")
            let before = try reopened.statistics()
            for _ in 0..<5 { #expect(try reopened.get(missing) == nil) }
            let after = try reopened.statistics()
            #expect(after.misses == before.misses + 5)
            #expect(after.memoryMisses == before.memoryMisses, "the memory tier was looked up for a URL never held")
        }
    }

    /// A damaged `entries` tree can hold a key of another size. No read finds it, so the scan
    /// skips it: it failed the open's build instead, leaving no filter, and every applied batch
    /// then started a scan that failed again (review of the filter, 2026-12-05).
    @Test func aKeyOfAnotherSizeInTheEntriesTreeIsSkippedByTheBuild() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            try makeClosedStore(at: path, entries: 10)
            do {
                let environment = try Environment.open(path: path)
                let entries = try environment.openDatabase(named: "entries", create: false)
                try environment.write { txn in try txn.put(entries, key: [1, 2, 3, 4, 5], value: [0]) }
            }
            let reopened = try ImageStore(path: path, configuration: configuration())
            defer { reopened.close() }
            #expect(try #require(reopened.keyFilterForTesting).builds == 1, "the open's build")
            for n in 0..<10 { #expect(try reopened.get("https://x.test/\(n)")?.data == Data([UInt8(n)])) }
            #expect(try reopened.get("https://x.test/never-stored") == nil)
        }
    }

    @Test func entriesOnlyInTheLogWhenTheStoreCrashedAreFoundAfterRecovery() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            var logging = configuration()
            logging.applyLog = false
            let store = try ImageStore(path: path, configuration: logging)
            for n in 0..<20 { try store.put(Data([UInt8(n)]), for: "https://x.test/\(n)", durability: .sync) }
            store.abandonForTesting()  // a crash: every record only in the log

            let reopened = try ImageStore(path: path, configuration: configuration())
            defer { reopened.close() }
            #expect(reopened.recoveryReport.recordsReplayed == 20)
            for n in 0..<20 { #expect(try reopened.get("https://x.test/\(n)")?.data == Data([UInt8(n)])) }
        }
    }

    @Test func theFilterRebuildsAsKeysArriveAndLosesNoneThroughRemovals() throws {
        try withTemporaryStore(configuration(minimumKeys: 8)) { store throws in
            let filter = try #require(store.keyFilterForTesting)
            for n in 0..<300 {
                try store.put(Data([UInt8(truncatingIfNeeded: n)]), for: "https://x.test/\(n)", durability: .background)
                #expect(try store.get("https://x.test/\(n)") != nil, "\(n) right after its put")
                if n % 50 == 49 { try store.checkpoint() }  // applied: the rebuilds run after batches
            }
            try store.checkpoint()
            // The open's, then at least two as the table filled (it doubles each time).
            #expect(filter.builds >= 3, "only \(filter.builds) builds: the table never filled")
            for n in 0..<300 { #expect(try store.get("https://x.test/\(n)") != nil, "\(n)") }
            for n in stride(from: 0, to: 300, by: 2) { try store.remove("https://x.test/\(n)") }
            try store.removeAll()
            try store.put(Data([7]), for: "https://x.test/again")
            try store.checkpoint()
            #expect(try store.get("https://x.test/again")?.data == Data([7]))
            #expect(try store.get("https://x.test/1") == nil)
        }
    }

    /// New keys put while the filter is rebuilt, read by other threads at once. The writer
    /// removes what it put 20 keys earlier, so the store stays small and its table is rebuilt
    /// every few dozen puts: most rebuilds race puts of keys that are in no table yet.
    @Test func putsRacingRebuildsAreAlwaysFoundByConcurrentReaders() throws {
        try withTemporaryStore(configuration(minimumKeys: 8, rebuildPause: .milliseconds(3))) { store throws in
            let filter = try #require(store.keyFilterForTesting)
            let acknowledged = Atomic<Int>(0)  // keys below this were put
            let removing = Atomic<Int>(0)  // keys below this may be removed
            let done = Atomic<Bool>(false)
            let lost = LockedValue<(count: Int, first: [String])>((0, []))
            /// Counts a failure; keeps the first few for the message.
            @Sendable func record(_ failure: String) {
                lost.withLock { lost in
                    lost.count += 1
                    if lost.first.count < 10 { lost.first.append(failure) }
                }
            }
            let total = 2_000
            let group = startThreads(3) { role in
                if role == 0 {
                    defer { done.store(true, ordering: .releasing) }
                    do {
                        for n in 0..<total {
                            // Synced: a batch (and a rebuild check) per few puts.
                            try store.put(Data([UInt8(truncatingIfNeeded: n)]), for: "https://x.test/\(n)", durability: .sync)
                            acknowledged.store(n + 1, ordering: .releasing)
                            if n >= 20 {
                                removing.store(n - 19, ordering: .releasing)
                                try store.remove("https://x.test/\(n - 20)", durability: .background)
                            }
                        }
                    } catch {
                        record("writer: \(error)")
                    }
                    return
                }
                var generator = SeededGenerator(seed: UInt64(role))
                while !done.load(ordering: .acquiring) {
                    let count = acknowledged.load(ordering: .acquiring)
                    guard count > 0 else { continue }
                    let n = max(0, count - 1 - Int(generator.next() % 10))
                    let url = "https://x.test/\(n)"
                    do {
                        // Absent is right only for a key whose removal had begun.
                        if try store.get(url) == nil, n >= removing.load(ordering: .acquiring) {
                            record(url)
                        }
                    } catch {
                        record("\(url): \(error)")
                    }
                }
            }
            group.wait()
            try store.checkpoint()
            let failures = lost.withLock { $0 }
            #expect(failures.count == 0, "\(failures.count) reads of acknowledged keys failed, first: \(failures.first)")
            #expect(filter.builds > 5, "only \(filter.builds) builds: few rebuilds raced the puts")
            for n in (total - 20)..<total { #expect(try store.get("https://x.test/\(n)") != nil, "\(n)") }
        }
    }

    @Test func aReadOnlyStoreHasNoFilterAndSeesWhatAnotherWriterAdds() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            try ImageStore(path: path, configuration: configuration()).close()
            var readOnly = configuration()
            readOnly.readOnly = true
            let reader = try ImageStore(path: path, configuration: readOnly)
            defer { reader.close() }
            #expect(reader.keyFilterForTesting == nil)
            // Another process writes after this one opened: a filter built here would miss it.
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", path, "3", "sync"])
            defer { _ = writer.kill() }
            #expect(writer.wait(for: "ready"))
            // The other process's applier puts them into LMDB, where a reader sees them, soon after.
            let deadline = Date().addingTimeInterval(30)
            var found = 0
            while found < 3 && Date() < deadline {
                found = try (0..<3).count { try reader.get("https://x.test/\($0)") != nil }
                if found < 3 { usleep(10_000) }
            }
            #expect(found == 3, "entries of the other process seen: \(found) of 3")
        }
    }
}
