import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Testing

/// `Transaction.checkFreeList` (and `checkStructure`, which adds the trees) holds a healthy
/// store to its rules however LMDB built it: a false alarm would refuse every write of a
/// healthy store. (Damage they find: `DamagedTreeWriteTests`.)
@Suite struct FreeListCheckTests {
    /// Rounds of puts, rewrites, large values (overflow pages) and deletions: after each, the
    /// check passes and counts what `freePageCount` counts.
    @Test func aChurnedFreeListPassesAndCountsEveryFreePage() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try Environment.openForTest(directory)
            let db = try environment.openDatabase(named: "t")
            var generator = SeededGenerator(seed: 13)
            var checkedNonEmpty = 0
            for round in 0..<40 {
                try environment.write { txn in
                    for _ in 0..<50 {
                        let key = UInt8.random(in: 0...250, using: &generator)
                        let size = Bool.random(using: &generator) ? Int.random(in: 1...400, using: &generator) : Int.random(in: 5_000...60_000, using: &generator)
                        if round % 3 == 2 && key % 2 == 0 {
                            _ = try txn.delete(db, key: [key])
                        } else {
                            try txn.put(db, key: [key], value: [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: size))
                        }
                    }
                }
                let (checked, counted) = try environment.read { txn in
                    try txn.checkStructure(of: [db])  // the tree check raises no false alarm either
                    return (try txn.checkFreeList(), try txn.freePageCount())
                }
                #expect(checked == counted, "round \(round)")
                if checked > 0 { checkedNonEmpty += 1 }
            }
            #expect(checkedNonEmpty > 20, "the churn left free pages to check")
        }
    }
}
