import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

@Suite struct ExpiryTests {
    private func configuration(clock: ManualClock, defaultExpiry: Expiry = .after(.seconds(3600)), sliding: Bool = false,
                               batch: Int = 256, budget: Int? = nil) -> ImageStore.Configuration {
        var configuration = makeConfiguration(clock: clock)
        configuration.defaultExpiry = defaultExpiry
        configuration.slidingExpiration = sliding
        configuration.sweepBatchSize = batch
        configuration.sweepPeriod = nil
        configuration.maxDiskBytes = budget
        return configuration
    }

    // MARK: - TTLs

    @Test func defaultPerPutAndNeverTTLs() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, defaultExpiry: .after(.seconds(100)))) { store throws in
            let base = try store.put(Data([1]), for: "https://x.test/default")
            #expect(base.expiresAt == clock.now.addingTimeInterval(100))
            #expect(try store.put(Data([2]), for: "https://x.test/short", expiry: .after(.seconds(10))).expiresAt == clock.now.addingTimeInterval(10))
            #expect(try store.put(Data([3]), for: "https://x.test/never", expiry: .never).expiresAt == nil)
            clock.advance(by: 10)
            #expect(try store.get("https://x.test/short") == nil)
            #expect(try store.get("https://x.test/default") != nil)
            clock.advance(by: 90)
            #expect(try store.get("https://x.test/default") == nil)
            clock.advance(by: 1e9)
            #expect(try store.get("https://x.test/never")?.data == Data([3]))
        }
    }

    @Test func noDefaultTTLMeansNever() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, defaultExpiry: .never)) { store throws in
            #expect(try store.put(Data([1]), for: "https://x.test/a").expiresAt == nil)
        }
    }

    @Test func slidingExpiryExtendsOnRead() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, sliding: true)) { store throws in
            try store.put(Data([1]), for: "https://x.test/read", expiry: .after(.seconds(60)))
            try store.put(Data([2]), for: "https://x.test/unread", expiry: .after(.seconds(60)))
            for _ in 0..<5 {
                clock.advance(by: 50)
                #expect(try store.get("https://x.test/read") != nil, "each read slides the expiry")
            }
            #expect(try store.get("https://x.test/unread") == nil)
            // The slide survives a sweep (access times are persisted first)…
            #expect(try store.sweepExpired().entries == 1)
            #expect(try store.get("https://x.test/read")?.info.expiresAt == clock.now.addingTimeInterval(60))
            clock.advance(by: 61)
            #expect(try store.get("https://x.test/read") == nil, "…and stops when reads stop")
        }
    }

    /// Persisting access times moves a sliding entry's expiry in LMDB; the copy in the memory
    /// tier must not go on serving the old expiry (as stale, to a caller allowing stale).
    @Test func aSlidEntryInMemoryIsNotStaleOnceItsAccessIsPersisted() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, sliding: true)) { store throws in
            let url = "https://x.test/slides"
            let start = clock.now
            try store.put(Data([1]), for: url, expiry: .after(.seconds(60)))
            _ = try store.statistics()  // applied to LMDB
            clock.advance(by: 50)
            #expect(try store.get(url) != nil)
            #expect(try store.get(url)?.source == .memory, "the read filled the memory tier")
            #expect(try store.sweepExpired().entries == 0)  // persists the read: expiry now start + 110 s
            clock.advance(by: 30)
            let image = try store.get(url, allowingStale: true)
            #expect(image?.isStale == false, "fresh until start + 110 s")
            #expect(image?.info.expiresAt == start.addingTimeInterval(140), "and this read slides it again")
            #expect(try store.get(url) != nil)
        }
    }

    // MARK: - Sweeps

    @Test func theSweepDeletesExactlyWhatExpiredInBatches() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, batch: 3)) { store throws in
            for n in 0..<20 { try store.put(Data(repeating: UInt8(n), count: 100), for: "https://x.test/\(n)", expiry: .after(.seconds(n % 2 == 0 ? 10 : 1000))) }
            clock.advance(by: 11)
            let dry = try store.sweepExpired(dryRun: true)
            #expect(dry == SweepReport(entries: 10, bytes: 1000, batches: 0))
            #expect(try store.statistics().entryCount == 20, "a dry run deletes nothing")
            let stats = try store.statistics()
            #expect(stats.expiredEntries == 10 && stats.expiredBytes == 1000)
            let report = try store.sweepExpired()
            #expect(report == SweepReport(entries: 10, bytes: 1000, batches: 4))
            #expect(Set(try store.entries().map(\.url)) == Set(stride(from: 1, to: 20, by: 2).map { "https://x.test/\($0)" }))
            #expect(try store.statistics().expiredEvictions == 10)
            #expect(try store.sweepExpired().entries == 0)
        }
    }

    /// lmdb.h: reader slots of dead processes must be cleared periodically. Every sweep does.
    @Test func aSweepClearsReaderSlotsOfDeadProcesses() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock)) { store throws in
            try store.put(Data([1]), for: "https://x.test/a")
            let reader = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-reader", store.path])
            #expect(reader.wait(for: "ready"))
            reader.kill()
            let environment = try Environment.open(path: store.path)  // the store's own instance
            #expect(environment.readerTable().contains { $0.contains(" \(reader.processIdentifier) ") })
            try store.sweepExpired()
            #expect(!environment.readerTable().contains { $0.contains(" \(reader.processIdentifier) ") }, "\(environment.readerTable())")
        }
    }

    // MARK: - The disk budget

    /// What `verify --repair` sets aside is not the cache's to evict for: quarantined bytes do
    /// not count toward `maxDiskBytes` (the quarantine is emptied by `quarantine --purge` or
    /// `compact --purge-quarantine`).
    @Test func quarantinedBytesDoNotCountTowardTheBudget() throws {
        let clock = ManualClock()
        let budget = 4 << 20
        try withTemporaryDirectory { directory throws in
            let config = configuration(clock: clock, defaultExpiry: .never, batch: 8, budget: budget)
            do {
                let store = try ImageStore(path: directory, configuration: config)
                for n in 0..<30 { try store.put(Data(repeating: UInt8(n), count: 100_000), for: "https://x.test/bad/\(n)") }
                store.close()
            }
            // Damage every blob, so that a repair moves all 3 MB to the quarantine.
            do {
                let environment = try Environment.open(path: directory)
                let blobs = try environment.openDatabase(named: "blobs", create: false)
                try environment.write { txn throws in
                    var keys: [[UInt8]] = []
                    try txn.scan(blobs) { key, _ in keys.append(Array(key)); return true }
                    for key in keys {
                        var blob = Array(try txn.get(blobs, key: key)!)
                        blob[0] ^= 0x40
                        try txn.put(blobs, key: key, value: blob)
                    }
                }
            }
            let store = try ImageStore(path: directory, configuration: config)
            defer { store.close() }
            #expect(try store.verify(ImageStore.VerifyOptions(repair: true)).unrepaired == [])
            #expect(try store.quarantinedEntries().count == 30)
            // 2 MB of new entries fit the 4 MB budget, whatever the quarantine holds.
            for n in 0..<20 {
                clock.advance(by: 1)
                try store.put(Data(repeating: UInt8(n), count: 100_000), for: "https://x.test/good/\(n)")
            }
            let stats = try store.statistics()
            #expect(stats.budgetEvictions == 0, "evicted \(stats.budgetEvictions) entries for the quarantine's bytes")
            #expect(stats.entryCount == 20)
            #expect(stats.occupiedBytes > budget, "the quarantine's pages are there, outside the budget")
        }
    }

    @Test func theBudgetHoldsAfterEveryPutAndEvictsTheLeastRecentlyUsedFirst() throws {
        let clock = ManualClock()
        let budget = 2 << 20
        try withTemporaryStore(configuration(clock: clock, batch: 8, budget: budget)) { store throws in
            var random = SeededGenerator(seed: 5)
            try store.put(random.bytes(50_000), for: "https://x.test/favourite")
            for n in 0..<200 {
                clock.advance(by: 1)
                _ = try store.get("https://x.test/favourite")
                try store.put(random.bytes(40_000), for: "https://x.test/\(n)")
                let stats = try store.statistics()
                #expect(stats.occupiedBytes <= budget, "after put \(n): \(stats.occupiedBytes) bytes of pages")
            }
            let stats = try store.statistics()
            #expect(stats.budgetEvictions > 100)
            #expect(try store.get("https://x.test/favourite") != nil, "the entry read all along was never the LRU")
            #expect(try store.get("https://x.test/0") == nil, "the oldest unread entries went first")
            #expect(try store.get("https://x.test/199") != nil)
        }
    }

    @Test func anEntryLargerThanTheBudgetIsRefused() throws {
        let clock = ManualClock()
        try withTemporaryStore(configuration(clock: clock, budget: 1 << 20)) { store throws in
            #expect {
                try store.put(Data(count: 1 << 20), for: "https://x.test/huge")
            } throws: { error in
                guard case let .entryOverDiskBudget(byteCount, needed, limit, maxDiskBytes) = error as? ImageStoreError else { return false }
                return byteCount == 1 << 20 && needed > byteCount && limit == Int(Double(1 << 20) * 0.9) && maxDiskBytes == 1 << 20
            }
        }
    }

    @Test func accessTimesSurviveAReopen() throws {
        let clock = ManualClock()
        try withTemporaryDirectory { directory throws in
            let config = configuration(clock: clock, budget: 64 << 20)
            do {
                let store = try ImageStore(path: directory, configuration: config)
                try store.put(Data([1]), for: "https://x.test/a")
                clock.advance(by: 500)
                _ = try store.get("https://x.test/a")
                store.close()
            }
            let store = try ImageStore(path: directory, configuration: config)
            defer { store.close() }
            #expect(try store.entries().first?.lastAccessedAt == clock.now)
            try checkConsistency(of: store)
        }
    }

    // MARK: - Property test

    @Test func indexesStayConsistentUnderRandomOperations() throws {
        let clock = ManualClock()
        var random = SeededGenerator()
        print("ExpiryTests property seed \(random.seed) (replay with IMGSTORE_SEED=\(random.seed))")
        try withTemporaryDirectory { directory throws in
            let config = configuration(clock: clock, sliding: Bool.random(using: &random), batch: 4, budget: 4 << 20)
            var store = try ImageStore(path: directory, configuration: config)
            var model: [String: (data: Data, expiresAt: Date?)] = [:]
            for step in 0..<300 {
                let url = "https://x.test/\(Int.random(in: 0..<40, using: &random))"
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<4:
                    let data = random.bytes(Int.random(in: 1...30_000, using: &random))
                    let expiry: Expiry = [.storeDefault, .after(.seconds(5)), .after(.seconds(50)), .never].randomElement(using: &random)!
                    let info = try store.put(data, for: url, expiry: expiry)
                    model[url] = (data, info.expiresAt)
                case 4: if try store.remove(url) { model[url] = nil }
                case 5: clock.advance(by: Double(Int.random(in: 1...20, using: &random)))
                case 6:
                    try store.sweepExpired()
                    model = model.filter { $0.value.expiresAt.map { $0 > clock.now } ?? true || config.slidingExpiration }
                case 7:
                    store.close()
                    store = try ImageStore(path: directory, configuration: config)
                default:
                    if let image = try store.get(url) {
                        #expect(model[url]?.data == image.data, "step \(step): \(url) returned other bytes")
                    }
                }
                #expect(try store.consistencyProblems() == [], "step \(step)")
            }
            store.close()
        }
    }
}
