import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// How much the disk budget evicts, and which entries.
@Suite struct BudgetEvictionTests {
    private func configuration(clock: ManualClock, budget: Int) -> ImageStore.Configuration {
        var configuration = makeConfiguration(clock: clock)
        configuration.maxDiskBytes = budget
        return configuration  // the default sweepBatchSize (256): more than the store holds
    }

    /// Failed before: the put that took a store of 13 entries over its 2 MiB budget evicted all
    /// 14, itself included ("evicted 14 entries"): eviction removed a whole batch of
    /// `sweepBatchSize` (256) least recently used entries per transaction and measured only
    /// between batches. This is what `aStoreThatFilledItsDiskIsGotOutOfByItsDiskBudget` hit
    /// under load, when its fill stopped early and the store reopened under its budget.
    @Test func aPutThatTakesTheStoreOverItsBudgetEvictsOnlyTheOldestEntriesItMust() throws {
        let clock = ManualClock()
        let budget = 2 << 20
        try withTemporaryStore(configuration(clock: clock, budget: budget)) { store throws in
            var random = SeededGenerator(seed: 21)
            for n in 0..<13 {
                clock.advance(by: 1)
                try store.put(random.bytes(150_000), for: "https://x.test/\(n)")
            }
            #expect(try store.statistics().budgetEvictions == 0, "13 entries fit in the budget")
            clock.advance(by: 1)
            let newest = random.bytes(150_000)
            try store.put(newest, for: "https://x.test/newest")
            try store.checkpoint()
            let stats = try store.statistics()
            #expect(try store.image(for: "https://x.test/newest")?.data == newest, "the entry just put was evicted")
            #expect((1...3).contains(stats.budgetEvictions), "evicted \(stats.budgetEvictions) of 14 entries to shed about 2")
            #expect(stats.occupiedBytes <= budget, "\(stats.occupiedBytes) bytes of pages")
            #expect(try store.info(for: "https://x.test/0") == nil, "the least recently used went first")
            #expect(try store.info(for: "https://x.test/12") != nil)
        }
    }
}
