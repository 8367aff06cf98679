import CLMDB

/// Checking a database's B-tree before a writer trusts it. A write's own path (root to leaf) is
/// not all it reads: LMDB's `mdb_rebalance` (after a delete leaves a page under a quarter full)
/// moves a node from, or merges with, the page's neighbour, and `mdb_page_split` may step to a
/// neighbour when the parent splits too. A damaged neighbour fails that commit, and the commit of
/// every later write that replays it. So a writer walks the whole structure once, at its open,
/// instead of guessing which neighbours a write might touch.
///
/// The walk is a cursor over every key: it visits every leaf page, and every branch page on the
/// way down to one (`mdb_cursor_sibling`), so all of them. It reads no overflow page: a value on
/// overflow pages is a page number in its leaf node, and only the buffer's place is checked, not
/// its bytes. Rules:
/// 1. Keys ascend strictly (`Transaction.scan`): a damaged page's nodes out of order, repeated or
///    read from the wrong offsets fail here.
/// 2. Every key and value buffer lies inside the file's pages in use (`MapBounds`), so a damaged
///    node size or overflow page number is an error, not a read past the file.
/// 3. The keys counted equal the database record's count (`ms_entries`, kept by LMDB in the
///    parent's node): a damaged page count or node count shows as a difference.
/// LMDB's own checks on the way (`MDB_CORRUPTED` "wrong type", `MDB_PAGE_NOTFOUND`) count too.
///
/// Not caught: damage that leaves a page well formed (a key's or value's bytes changed in place,
/// bytes in a page's free room). That damage does not stop LMDB from applying a write; `verify`
/// finds what it does to entries (checksums, keys).
extension Transaction {
    /// Walks `database`'s tree whole and checks the rules above.
    /// - Returns: the number of keys it holds.
    /// - Throws: `LMDBError` `MDB_CORRUPTED` naming the rule broken, or LMDB's damage codes
    ///   (`MDB_PAGE_NOTFOUND`, `MDB_CORRUPTED`) from the walk; a fault reading a page the
    ///   guarded call turned into an error.
    @discardableResult
    package func checkTree(_ database: Database) throws -> Int {
        let expected = try statistics(database).entries
        var counted = 0
        try scan(database) { _, _ in
            counted += 1
            return true
        }
        guard counted == expected else {
            throw LMDBError(code: MDB_CORRUPTED, detail: "the \(database.name) database's tree holds \(counted) keys where its record counts \(expected) (a damaged page)")
        }
        return counted
    }

    /// What a writer checks before it acknowledges any write: LMDB's free list
    /// (`checkFreeList`), the main database (which holds the named databases' records) and the
    /// tree of each of `databases`. One read transaction, so one snapshot.
    /// - Throws: the first damage found, as `checkFreeList` and `checkTree` throw it.
    package func checkStructure(of databases: [Database]) throws {
        _ = try checkFreeList()
        try checkTree(Database(dbi: 1, name: "(main)"))  // MAIN_DBI
        for database in databases { try checkTree(database) }
    }
}
