import CLMDB
import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Testing

/// LMDB never writes a page that a transaction allocated and freed again before its commit (a
/// "loose" page, skipped by `mdb_page_flush` and put on the free list). When such pages lie at
/// the end, `data.mdb` is legitimately shorter than the pages its meta page counts as in use,
/// and after a power cut the same holds for free pages whose writes were lost. Only pages a
/// tree can reach must lie inside the file.
@Suite struct FreeTailTests {
    /// Builds a store whose last pages are free: a large value written at the end of the file,
    /// then deleted, while enough pages freed earlier serve every later allocation.
    private func storeEndingInFreePages(_ directory: String) throws -> (live: [UInt8: [UInt8]], firstFree: Int, pageSize: Int) {
        let environment = try Environment.openForTest(directory)
        let db = try environment.openDatabase(named: "t")
        var live: [UInt8: [UInt8]] = [:]
        // Churn: many small values written and rewritten leave a long free list behind.
        for round in 0..<6 {
            try environment.write { txn in
                for key in UInt8(0)..<200 {
                    let value = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 300)
                    try txn.put(db, key: [key], value: value)
                    live[key] = value
                }
            }
        }
        for key in UInt8(0)..<200 where key % 2 == 1 {
            try environment.write { txn in _ = try txn.delete(db, key: [key]) }
            live[key] = nil
        }
        // A value of many overflow pages: no run of free pages is that long, so it goes at the end.
        let large = [UInt8](repeating: 0xAB, count: 64 * (try environment.statistics()).pageSize)
        try environment.write { txn in try txn.put(db, key: [255], value: large) }
        try environment.write { txn in _ = try txn.delete(db, key: [255]) }
        for round in 0..<3 {
            try environment.write { txn in try txn.put(db, key: [0], value: [UInt8(round)]) }
            live[0] = [UInt8(round)]
        }
        let statistics = try environment.statistics()
        let free = try environment.read { txn in try txn.freePageNumbers() }
        var firstFree = statistics.lastPageNumber
        while firstFree > 0 && free.contains(firstFree - 1) { firstFree -= 1 }
        try #require(free.contains(statistics.lastPageNumber), "the construction must end the file in free pages")
        try #require(statistics.lastPageNumber - firstFree >= 8, "at least 8 free pages at the end")
        return (live, firstFree, statistics.pageSize)
    }

    @Test func aDataFileEndingBeforeItsFreeTailPagesOpensAndKeepsEveryEntry() throws {
        try withTemporaryDirectory { directory throws in
            let (live, firstFree, pageSize) = try storeEndingInFreePages(directory)
            #expect(truncate(directory + "/data.mdb", off_t(firstFree * pageSize)) == 0)

            let environment = try Environment.openForTest(directory)
            let db = try environment.openDatabase(named: "t", create: false)
            for (key, value) in live {
                #expect(try environment.read { try $0.get(db, key: [key]).map(Array.init) } == value)
            }
            // Writes reuse and rewrite the missing pages; the store reopens again afterwards.
            try environment.write { txn in
                try txn.put(db, key: [254], value: [UInt8](repeating: 7, count: 40 * pageSize))
            }
            try environment.sync()
        }
    }

    @Test func aDataFileMissingAPageInUseIsStillCorrupt() throws {
        try withTemporaryDirectory { directory throws in
            let (_, firstFree, pageSize) = try storeEndingInFreePages(directory)
            // One page more than the free tail: a page the meta page or a tree may reach.
            #expect(truncate(directory + "/data.mdb", off_t((firstFree - 1) * pageSize)) == 0)
            #expect(throws: LMDBError.corrupted) { try Environment.openForTest(directory) }
        }
    }
}
