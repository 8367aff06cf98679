import CLMDB

/// Checking LMDB's free list (`FREE_DBI`, database 0), which every commit reads to find pages
/// to reuse (`mdb_page_alloc`) and rewrites (`mdb_freelist_save`). LMDB trusts it: a damaged
/// free-list page fails the commit of *every* later write, whatever it touches, and a record
/// whose count is damaged makes LMDB copy past the record's end. So a writer checks it before it
/// acknowledges writes (a put that cannot commit must never be acknowledged).
///
/// The layout (lmdb.h, mdb.c, LMDB 0.9): one record per transaction that freed pages, or per
/// chunk of reclaimed pages LMDB saved back.
/// 1. The key is that transaction's id, a native `size_t` (`MDB_INTEGERKEY`): keys go up and
///    none is newer than the snapshot reading them.
/// 2. The value is a whole number of `size_t` words: the count `n` first, then `n` page numbers.
///    `n` may be smaller than the room (LMDB reserves records before it fills them, and zeroes
///    the count of the ones it does not fill), never larger.
/// 3. The page numbers are sorted descending (an `MDB_IDL`), and each names a page of the file
///    other than the two meta pages: `2 ... me_last_pgno`.
extension Transaction {
    /// Walks the free list whole and checks the rules above.
    /// - Returns: the number of free pages it lists.
    /// - Throws: `LMDBError` `MDB_CORRUPTED` naming the rule a record breaks, or LMDB's damage
    ///   codes (`MDB_PAGE_NOTFOUND`, `MDB_CORRUPTED`, a buffer outside the file) from the walk.
    package func checkFreeList() throws -> Int {
        var info = MDB_envinfo()
        try check(mdb_env_info(mdb_txn_env(handle), &info))
        let lastPage = Int(info.me_last_pgno)
        let snapshot = id
        let word = MemoryLayout<Int>.size
        var total = 0
        var previousKey: Int?
        try scan(Self.freeList) { key, value in
            guard key.count == word else { throw Self.damagedFreeList("a key of \(key.count) bytes, not a transaction id") }
            let transaction = key.loadUnaligned(as: Int.self)
            guard transaction <= snapshot, previousKey.map({ transaction > $0 }) ?? true else {
                throw Self.damagedFreeList("transaction id \(transaction) out of order after \(previousKey.map(String.init) ?? "none"), snapshot \(snapshot)")
            }
            previousKey = transaction
            let count = try Self.pageCount(ofFreeRecord: value, transaction: transaction)
            var above = Int.max
            for index in 0..<count {
                let page = value.loadUnaligned(fromByteOffset: (index + 1) * word, as: Int.self)
                guard page >= 2, page <= lastPage, page < above else {
                    throw Self.damagedFreeList("the record of transaction \(transaction) lists page \(page) (pages 2 to \(lastPage), descending)")
                }
                above = page
            }
            total += count
            return true
        }
        return total
    }

    /// Pages on LMDB's free list (reusable by later writes), summed over its records (rule 2).
    /// With `freedBefore`, only records of transactions older than that id count: LMDB reuses
    /// a record's pages only once no reader's snapshot is that old (`mdb_find_oldest`).
    ///
    /// Each record's count is checked against the record's room, as `checkFreeList` does: a
    /// damaged page handed out records whose count was any word, and summing those trapped on
    /// overflow (`DamagedFreeListTests`).
    /// - Throws: `LMDBError` `MDB_CORRUPTED` for a record that breaks rule 2, and LMDB's damage
    ///   codes from the walk.
    package func freePageCount(freedBefore: UInt64? = nil) throws -> Int {
        var total = 0
        try scan(Self.freeList) { key, value in
            let transaction = key.count == MemoryLayout<Int>.size ? key.loadUnaligned(as: Int.self) : nil
            if let freedBefore, let transaction, UInt64(truncatingIfNeeded: transaction) >= freedBefore { return false }
            // At most the record's room, so the sum stays below the map's size in pages.
            total += try Self.pageCount(ofFreeRecord: value, transaction: transaction)
            return true
        }
        return total
    }

    /// The page numbers on the free list, of every record (each record's count checked against
    /// its room, as `freePageCount` does).
    /// - Throws: as `freePageCount` does.
    package func freePageNumbers() throws -> Set<Int> {
        let word = MemoryLayout<Int>.size
        var pages = Set<Int>()
        try scan(Self.freeList) { key, value in
            let transaction = key.count == word ? key.loadUnaligned(as: Int.self) : nil
            for index in 0..<(try Self.pageCount(ofFreeRecord: value, transaction: transaction)) {
                pages.insert(value.loadUnaligned(fromByteOffset: (index + 1) * word, as: Int.self))
            }
            return true
        }
        return pages
    }

    /// LMDB's free-list database, `FREE_DBI` (0), which no named database handle reaches.
    static let freeList = Database(dbi: 0, name: "(free list)")

    /// The count `n` a free-list record starts with, checked against its room (rule 2): the
    /// value is a whole number of words, at least one, and `0 <= n <= words - 1`.
    /// `transaction` (the record's key, nil when the key is not one word) only names the record.
    private static func pageCount(ofFreeRecord value: UnsafeRawBufferPointer, transaction: Int?) throws(LMDBError) -> Int {
        let word = MemoryLayout<Int>.size
        let words = value.count / word
        let record = transaction.map { "the record of transaction \($0)" } ?? "a record with a malformed key"
        guard value.count % word == 0, words >= 1 else {
            throw damagedFreeList("\(record) is \(value.count) bytes, not a whole page list")
        }
        let count = value.loadUnaligned(as: Int.self)
        guard count >= 0, count <= words - 1 else {
            throw damagedFreeList("\(record) counts \(count) pages in room for \(words - 1)")
        }
        return count
    }

    private static func damagedFreeList(_ rule: String) -> LMDBError {
        LMDBError(code: MDB_CORRUPTED, detail: "LMDB's free list is damaged (\(rule))")
    }
}
