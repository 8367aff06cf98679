import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A put under a disk budget is kept, or refused before it is logged (`entryOverDiskBudget`);
/// it is never acknowledged and then evicted by its own budget, and a refused put evicts
/// nothing.
@Suite struct BudgetAdmissionTests {
    private func configuration(budget: Int?, clock: ManualClock = ManualClock()) -> ImageStore.Configuration {
        var configuration = makeConfiguration(clock: clock)
        configuration.maxDiskBytes = budget
        configuration.sweepPeriod = nil
        return configuration
    }

    /// Fills `path` (no budget) with `count` entries of `size` random bytes, one second apart.
    private func fill(_ path: String, count: Int, size: Int, clock: ManualClock, random: inout SeededGenerator) throws {
        let store = try ImageStore(path: path, configuration: configuration(budget: nil, clock: clock))
        defer { store.close() }
        for n in 0..<count {
            clock.advance(by: 1)
            try store.put(random.bytes(size), for: "https://x.test/old/\(n)")
        }
    }

    /// The fields of an `entryOverDiskBudget` refusal; nil for any other error.
    private static func overBudget(_ error: any Error) -> (byteCount: Int, needed: Int, limit: Int, maxDiskBytes: Int)? {
        guard case let .entryOverDiskBudget(byteCount, needed, limit, maxDiskBytes) = error as? ImageStoreError else { return nil }
        return (byteCount, needed, limit, maxDiskBytes)
    }

    // MARK: - Refused, or kept

    /// Failed before for budgets up to about 45 KB: a 7,660-byte put passed the per-entry limit
    /// (0.9 of the budget) and was acknowledged, then the store's own pages plus the entry's were
    /// over the budget and the eviction after it was applied removed it. Now every budget either
    /// refuses the put (nothing logged, nothing evicted) or keeps the entry.
    @Test func everyBudgetEitherRefusesAPutOrKeepsIt() throws {
        var random = SeededGenerator(seed: 31)
        let data = random.bytes(7660)
        var refused: [Int] = []
        var kept: [Int] = []
        for budget in stride(from: 9000, through: 80000, by: 1000) {
            try withTemporaryStore(configuration(budget: budget)) { store throws in
                do {
                    try store.put(data, for: "https://x.test/p")
                } catch {
                    let refusal = try #require(Self.overBudget(error), "budget \(budget): \(error)")
                    #expect(refusal.byteCount == 7660 && refusal.maxDiskBytes == budget && refusal.limit == Int(Double(budget) * 0.9))
                    #expect(refusal.needed > refusal.limit && refusal.needed > refusal.byteCount)
                    #expect(try store.statistics().puts == 0, "refused before it was logged")
                    refused.append(budget)
                    return
                }
                try store.checkpoint()
                #expect(try store.image(for: "https://x.test/p")?.data == data, "budget \(budget): acknowledged, then evicted")
                #expect(try store.statistics().budgetEvictions == 0)
                kept.append(budget)
            }
        }
        #expect(!refused.isEmpty && !kept.isEmpty, "refused \(refused), kept \(kept)")
        #expect(refused.allSatisfy { r in kept.allSatisfy { r < $0 } }, "refused \(refused), kept \(kept)")
    }

    /// The estimate counts the pages the budget will measure with the entry alone in the store,
    /// whatever eviction freed before: a store of 10 MB evicted down to one entry keeps the
    /// entry that the smallest budget admitting it admitted. Failed before the budget stopped
    /// counting the free list's own pages (about 20 KB listing the 2,500 freed pages).
    @Test func theSmallestBudgetThatAdmitsAnEntryKeepsItAfterEvictingALargeStore() throws {
        let clock = ManualClock()
        var random = SeededGenerator(seed: 32)
        try withTemporaryDirectory { directory throws in
            try fill(directory, count: 400, size: 25_000, clock: clock, random: &random)
            let data = random.bytes(7660)
            // What the refusal reports the entry needs, with this store's own pages.
            var needed = 0
            do {
                let store = try ImageStore(path: directory, configuration: configuration(budget: 1, clock: clock))
                defer { store.close() }
                do {
                    try store.put(data, for: "https://x.test/new")
                    Issue.record("a put under a 1-byte budget was accepted")
                } catch {
                    needed = try #require(Self.overBudget(error), "\(error)").needed
                }
                #expect(try store.statistics().entryCount == 400, "the refused puts evicted entries")
            }
            #expect(needed > 7660)
            var budget = Int((Double(needed) / 0.9).rounded(.up))
            while Int(Double(budget) * 0.9) < needed { budget += 1 }
            clock.advance(by: 1)
            let store = try ImageStore(path: directory, configuration: configuration(budget: budget, clock: clock))
            defer { store.close() }
            try store.put(data, for: "https://x.test/new")
            try store.checkpoint()
            let stats = try store.statistics()
            #expect(try store.image(for: "https://x.test/new")?.data == data, "acknowledged under a \(budget)-byte budget, then evicted")
            #expect(stats.entryCount == 1, "\(stats.entryCount) entries")
            #expect(stats.occupiedBytes <= budget, "\(stats.occupiedBytes) bytes of pages")
            try checkConsistency(of: store)
        }
    }

    // MARK: - A refused put evicts nothing

    /// Failed before: opening as writer with a budget the store was over evicted at once, so a
    /// put refused afterwards (too large for the budget) had already emptied most of the store.
    /// Now the budget is enforced by the first write it lets through: the refused put changes
    /// nothing; the next put, which fits, evicts the least recently used entries.
    @Test func aRefusedPutEvictsNothingFromAStoreOverItsBudget() throws {
        let clock = ManualClock()
        var random = SeededGenerator(seed: 33)
        try withTemporaryDirectory { directory throws in
            try fill(directory, count: 10, size: 20_000, clock: clock, random: &random)
            let budget = 100_000
            let store = try ImageStore(path: directory, configuration: configuration(budget: budget, clock: clock))
            defer { store.close() }
            #expect(try store.statistics().entryCount == 10, "opening evicted")
            #expect {
                try store.put(random.bytes(95_000), for: "https://x.test/big")
            } throws: { error in
                guard let refusal = Self.overBudget(error) else { return false }
                return refusal.byteCount == 95_000 && refusal.limit == 90_000 && refusal.maxDiskBytes == budget
            }
            var stats = try store.statistics()
            #expect(stats.entryCount == 10 && stats.budgetEvictions == 0, "the refused put evicted \(stats.budgetEvictions)")
            clock.advance(by: 1)
            let small = random.bytes(1000)
            try store.put(small, for: "https://x.test/small")
            try store.checkpoint()
            stats = try store.statistics()
            #expect(stats.budgetEvictions > 0)
            #expect(stats.occupiedBytes <= budget, "\(stats.occupiedBytes) bytes of pages")
            #expect(try store.image(for: "https://x.test/small")?.data == small)
            #expect(try store.info(for: "https://x.test/old/0") == nil, "the least recently used went first")
            try checkConsistency(of: store)
        }
    }

    /// What the refusal says: the budget, the sizes, and that nothing was written or evicted.
    @Test func theRefusalNamesTheBudgetAndTheSizes() throws {
        try withTemporaryStore(configuration(budget: 1)) { store throws in
            do {
                try store.put(Data(count: 167), for: "https://x.test/new")
                Issue.record("a put of 167 bytes under a 1-byte budget was accepted")
            } catch let error as ImageStoreError {
                let text = error.description
                #expect(text.contains("167 bytes") && text.contains("Configuration.maxDiskBytes") && text.contains("1 byte"), "\(text)")
                #expect(text.contains("Nothing was written or evicted"), "\(text)")
                #expect(!text.contains("per entry"), "\(text)")
            }
        }
    }

    // MARK: - Opened over the budget

    /// A store opened with a budget it is over is brought under it by the first write or
    /// checkpoint (on a full disk, no put would get as far as the applier), and not by an open
    /// and close that wrote nothing.
    @Test func aStoreOpenedOverItsBudgetIsBroughtUnderItByACheckpointNotByTheOpen() throws {
        let clock = ManualClock()
        var random = SeededGenerator(seed: 34)
        try withTemporaryDirectory { directory throws in
            try fill(directory, count: 10, size: 20_000, clock: clock, random: &random)
            let budget = 100_000
            do {
                let store = try ImageStore(path: directory, configuration: configuration(budget: budget, clock: clock))
                store.close()
            }
            let store = try ImageStore(path: directory, configuration: configuration(budget: budget, clock: clock))
            defer { store.close() }
            #expect(try store.statistics().entryCount == 10, "an open and close without a write evicted")
            try store.checkpoint()
            let stats = try store.statistics()
            #expect(stats.entryCount < 10 && stats.budgetEvictions > 0)
            #expect(stats.occupiedBytes <= budget, "\(stats.occupiedBytes) bytes of pages")
            #expect(try store.info(for: "https://x.test/old/9") != nil, "the most recently used stays")
            try checkConsistency(of: store)
        }
    }
}
