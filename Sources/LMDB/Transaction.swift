import CLMDB

/// An open LMDB transaction. Only `Environment.read` and `Environment.write` create one, and
/// only for the duration of their closure: it cannot be copied, stored or carried across an
/// `await`.
///
/// Buffers it returns point into the memory map and are valid only until the transaction
/// ends; copy bytes out before the closure returns.
package struct Transaction: ~Copyable {
    /// `MDB_txn*`.
    let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }

    deinit { mdb_txn_abort(handle) }

    /// Commits. LMDB frees the transaction whether or not the commit succeeds, so the handle
    /// is given up before the result is checked.
    consuming func commit() throws(LMDBError) {
        let handle = self.handle
        discard self
        try check(mdb_txn_commit(handle))
    }

    /// The transaction's id: the snapshot a reader sees, or the one a writer will commit.
    package var id: Int { Int(mdb_txn_id(handle)) }

    /// Opens (creating when `create`, in a write transaction) a named database. The handle
    /// becomes usable by other transactions once this one commits.
    /// - Throws: `LMDBError.notFound` when it does not exist and `create` is false.
    package func openDatabase(named name: String, create: Bool) throws(LMDBError) -> Database {
        var dbi = MDB_dbi()
        try check(mdb_dbi_open(handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi))
        return Database(dbi: dbi, name: name)
    }

    // MARK: - Reads

    /// The value stored for `key`, or nil. The buffer is valid until the transaction ends.
    package func get(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(handle, database.dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    /// Entry and page counts of `database` as this transaction sees it.
    package func statistics(_ database: Database) throws(LMDBError) -> DatabaseStatistics {
        var stat = MDB_stat()
        try check(mdb_stat(handle, database.dbi, &stat))
        return DatabaseStatistics(
            entries: Int(stat.ms_entries), depth: Int(stat.ms_depth), branchPages: Int(stat.ms_branch_pages),
            leafPages: Int(stat.ms_leaf_pages), overflowPages: Int(stat.ms_overflow_pages))
    }

    /// Visits entries in key order, starting at the first key ≥ `start` (or the first key),
    /// until `body` returns false. Buffers are valid only during the call to `body`.
    package func scan(
        _ database: Database, from start: UnsafeRawBufferPointer? = nil,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, database.dbi, &cursor))
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var op = MDB_FIRST
        if let start {
            k = MDB_val(mv_size: start.count, mv_data: UnsafeMutableRawPointer(mutating: start.baseAddress))
            op = MDB_SET_RANGE
        }
        while true {
            let rc = mdb_cursor_get(cursor, &k, &v, op)
            if rc == MDB_NOTFOUND { return }
            try check(rc)
            let proceed = try body(
                UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
            if !proceed { return }
            op = MDB_NEXT
        }
    }

    /// Pages on LMDB's free list (reusable by later writes), summed over its records: each is
    /// keyed by the id of the transaction that freed its pages and is an array of page numbers
    /// whose first element is the count (lmdb.h, `FREE_DBI`). With `freedBefore`, only records
    /// of transactions older than that id count: LMDB reuses a record's pages only once no
    /// reader's snapshot is that old (`mdb_find_oldest`).
    package func freePageCount(freedBefore: UInt64? = nil) throws -> Int {
        var total = 0
        try scan(Database(dbi: 0, name: "(free list)")) { key, value in
            if let freedBefore, key.count >= 8, key.loadUnaligned(as: UInt64.self) >= freedBefore { return false }
            if value.count >= MemoryLayout<Int>.size { total += value.loadUnaligned(as: Int.self) }
            return true
        }
        return total
    }

    // MARK: - Writes (write transactions only; LMDB answers EACCES otherwise)

    /// Stores `value` under `key`, replacing what was there.
    package func put(_ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LMDBError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_put(handle, database.dbi, &k, &v, 0))
    }

    /// Reserves `count` bytes for `key` (`MDB_RESERVE`) and lets `fill` write them in place,
    /// saving a copy of large values.
    package func put(
        _ database: Database, key: UnsafeRawBufferPointer, reserving count: Int,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(LMDBError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: count, mv_data: nil)
        try check(mdb_put(handle, database.dbi, &k, &v, UInt32(MDB_RESERVE)))
        fill(UnsafeMutableRawBufferPointer(start: v.mv_data, count: count))
    }

    /// Deletes `key`; returns whether it was there.
    @discardableResult
    package func delete(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = mdb_del(handle, database.dbi, &k, nil)
        if rc == MDB_NOTFOUND { return false }
        try check(rc)
        return true
    }

    /// Deletes every entry of `database`, keeping the database.
    package func removeAll(_ database: Database) throws(LMDBError) {
        try check(mdb_drop(handle, database.dbi, 0))
    }
}

// MARK: - Byte-array conveniences

extension Transaction {
    package func get(_ database: Database, key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { (k) in try get(database, key: k) }
    }

    package func put(_ database: Database, key: [UInt8], value: [UInt8]) throws {
        try key.withUnsafeBytes { (k) in
            try value.withUnsafeBytes { (v) in try put(database, key: k, value: v) }
        }
    }

    @discardableResult
    package func delete(_ database: Database, key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { (k) in try delete(database, key: k) }
    }
}
