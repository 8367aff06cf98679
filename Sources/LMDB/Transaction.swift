import CLMDB
import CLMDBGuard
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// An open LMDB transaction. Only `Environment.read` and `Environment.write` create one, and
/// only for the duration of their closure: it cannot be copied, stored or carried across an
/// `await`.
///
/// Buffers it returns point into the memory map and are valid only until the transaction
/// ends; copy bytes out before the closure returns.
package struct Transaction: ~Copyable {
    /// `MDB_txn*`.
    let handle: OpaquePointer
    /// Where the pages in use lie in memory, to check every buffer LMDB hands out.
    let bounds: MapBounds
    /// The kept reader this read transaction is (`ReadTransactionPool`), whose cursors scans
    /// reuse; nil for a write transaction or one begun outside the pool. Held retained
    /// (`Unmanaged`, so that `discard self` is allowed): `deinit` or `endRead` releases it.
    let keptReader: Unmanaged<KeptReader>?

    init(handle: OpaquePointer, bounds: MapBounds, reader: KeptReader? = nil) {
        self.handle = handle
        self.bounds = bounds
        self.keptReader = reader.map { Unmanaged.passRetained($0) }
    }

    deinit {
        if let keptReader { keptReader.takeRetainedValue().end() } else { mdb_txn_abort(handle) }
    }

    /// The kept reader, borrowed for the transaction's life.
    private var reader: KeptReader? { keptReader?.takeUnretainedValue() }

    /// Installs the handler behind the fault-guarded calls (`CLMDBGuard`), once per process.
    static func installFaultGuard() { _ = faultGuard }
    /// Routes `env`'s failed internal assertions to the guarded call's recovery point.
    static func installAssertHandler(_ env: OpaquePointer) throws(LMDBError) { try check(imgstore_lmdb_install_assert(env)) }
    private static let faultGuard: Void = imgstore_lmdb_install_fault_guard()

    /// Commits. LMDB frees the transaction whether or not the commit succeeds, so the handle
    /// is given up before the result is checked.
    consuming func commit() throws(LMDBError) {
        let handle = self.handle
        discard self
        try check(imgstore_mdb_txn_commit(handle))
    }

    /// This read transaction, made a kept one (`ReadTransactionPool`): `endRead` resets it
    /// for reuse instead of ending it.
    consuming func kept() -> Transaction {
        let (handle, bounds) = (self.handle, self.bounds)
        // Invariant: only a transaction begun outside the pool is made a kept one.
        assert(keptReader == nil, "a kept transaction kept twice")
        discard self
        return Transaction(handle: handle, bounds: bounds, reader: KeptReader(handle: handle))
    }

    /// Ends a read transaction. A kept one is reset (it holds no snapshot from here on) and
    /// its reader returned for the pool; one that is not kept, or that opened a database
    /// (whose handle only a commit keeps usable), is committed and nil returned.
    consuming func endRead() throws(LMDBError) -> KeptReader? {
        let handle = self.handle
        let reader = keptReader?.takeRetainedValue()
        discard self
        guard let reader, !reader.openedDatabase else {
            defer { reader?.endCommitted() }
            try check(imgstore_mdb_txn_commit(handle))
            return nil
        }
        mdb_txn_reset(handle)
        return reader
    }

    /// The transaction's id: the snapshot a reader sees, or the one a writer will commit.
    package var id: Int { Int(mdb_txn_id(handle)) }

    /// Opens (creating when `create`, in a write transaction) a named database. The handle
    /// becomes usable by other transactions once this one commits.
    /// - Throws: `LMDBError.notFound` when it does not exist and `create` is false.
    package func openDatabase(named name: String, create: Bool) throws(LMDBError) -> Database {
        var dbi = MDB_dbi()
        reader?.openedDatabase = true
        try check(imgstore_mdb_dbi_open(handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi))
        return Database(dbi: dbi, name: name)
    }

    // MARK: - Reads

    /// The value stored for `key`, or nil. The buffer is valid until the transaction ends.
    package func get(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = imgstore_mdb_get(handle, database.dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc)
        return try bounds.checked(v, in: database)
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
    ///
    /// Returns whether it reached the end of the database (false when `body` stopped it).
    /// - Throws: what `body` throws; `LMDBError.corrupted` when a key is not greater than the
    ///   one before it (or than `start`): a damaged page made the cursor go back or repeat,
    ///   and going on would list entries twice or for ever.
    @discardableResult
    package func scan(
        _ database: Database, from start: UnsafeRawBufferPointer? = nil,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws -> Bool {
        let cursor = try openCursor(database.dbi)
        defer { closeCursor(cursor, database.dbi) }
        // The last key seen, for the order check, on the stack: LMDB keys are at most 511
        // bytes (`mdb_env_get_maxkeysize`), so a scan allocates nothing of its own.
        let capacity = max(Self.maxKeyBytes, start?.count ?? 0)
        return try withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 1) { previous in
            var k = MDB_val()
            var v = MDB_val()
            var op = MDB_FIRST
            var previousCount = 0
            if let start {
                k = MDB_val(mv_size: start.count, mv_data: UnsafeMutableRawPointer(mutating: start.baseAddress))
                op = MDB_SET_RANGE
                if let base = start.baseAddress { previous.baseAddress!.copyMemory(from: base, byteCount: start.count) }
                previousCount = start.count
            }
            var first = true
            while true {
                let rc = imgstore_mdb_cursor_get(cursor, &k, &v, op)
                if rc == MDB_NOTFOUND { return true }
                try check(rc)
                let key = try bounds.checked(k, in: database)
                let value = try bounds.checked(v, in: database)
                // LMDB's default order: bytewise, a prefix before the longer key. The first key
                // may equal `start` (MDB_SET_RANGE finds it); every later one must be greater.
                let order = Self.compare(key, UnsafeRawBufferPointer(rebasing: previous[..<previousCount]))
                let inOrder = first ? (start == nil || order >= 0) : order > 0
                // The free list (FREE_DBI) orders its integer keys natively, not bytewise.
                if !inOrder && database.dbi != 0 {
                    throw LMDBError(code: MDB_CORRUPTED, detail: "the \(database.name) database's keys go backwards or repeat (a damaged page)")
                }
                guard key.count <= capacity else {
                    throw LMDBError(code: MDB_CORRUPTED, detail: "the \(database.name) database has a \(key.count)-byte key, longer than LMDB allows (a damaged page)")
                }
                if let base = key.baseAddress { previous.baseAddress!.copyMemory(from: base, byteCount: key.count) }
                previousCount = key.count
                first = false
                if try !body(key, value) { return false }
                op = MDB_NEXT
            }
        }
    }

    /// LMDB's largest key (`MDB_MAXKEYSIZE` of its default build).
    static let maxKeyBytes = 511

    /// A cursor on `dbi`: the kept reader's when there is one, else a new one.
    private func openCursor(_ dbi: MDB_dbi) throws(LMDBError) -> OpaquePointer {
        if let reader { return try reader.cursor(dbi) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor))
        return cursor!
    }

    private func closeCursor(_ cursor: OpaquePointer, _ dbi: MDB_dbi) {
        if let reader { reader.returnCursor(cursor, dbi) } else { mdb_cursor_close(cursor) }
    }

    /// LMDB's default key comparison (`mdb_cmp_memn`): bytewise, then shorter first.
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        let order = common == 0 ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, common))
        return order != 0 ? order : a.count - b.count
    }

    /// The pages of LMDB's free-list database itself (`mdb_stat` on `FREE_DBI`): the records
    /// that list the free pages, which grow with what was freed and are data of no database.
    package func freeListStatistics() throws(LMDBError) -> DatabaseStatistics {
        try statistics(Self.freeList)
    }

    // MARK: - Writes (write transactions only; LMDB answers EACCES otherwise)

    /// Stores `value` under `key`, replacing what was there.
    package func put(_ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LMDBError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(imgstore_mdb_put(handle, database.dbi, &k, &v, 0))
    }

    /// Reserves `count` bytes for `key` (`MDB_RESERVE`) and lets `fill` write them in place,
    /// saving a copy of large values.
    package func put(
        _ database: Database, key: UnsafeRawBufferPointer, reserving count: Int,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(LMDBError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: count, mv_data: nil)
        try check(imgstore_mdb_put(handle, database.dbi, &k, &v, UInt32(MDB_RESERVE)))
        let reserved = try bounds.checked(v, in: database)
        fill(UnsafeMutableRawBufferPointer(mutating: reserved))
    }

    /// Deletes `key`; returns whether it was there.
    @discardableResult
    package func delete(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = imgstore_mdb_del(handle, database.dbi, &k, nil)
        if rc == MDB_NOTFOUND { return false }
        try check(rc)
        return true
    }

    /// Deletes every entry of `database`, keeping the database.
    package func removeAll(_ database: Database) throws(LMDBError) {
        try check(imgstore_mdb_drop(handle, database.dbi, 0))
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

/// Where the pages a transaction may read lie in this process's memory map, so a buffer LMDB
/// returns for a damaged page (a garbage size or offset) is an error instead of a read past
/// the end of the file (SIGBUS) or of the map (SIGSEGV).
///
/// A read transaction's buffers all lie in the map, below the end of the pages in use when it
/// began. A write transaction may also return pages it copied into heap memory (without
/// MDB_WRITEMAP) or pages it is adding past that end (with it), so for writers only a buffer
/// that starts inside the map is checked, against the map's end under MDB_WRITEMAP.
struct MapBounds {
    var start: UInt
    /// The end of the pages in use (`(me_last_pgno + 1) × page size` past the start).
    var used: UInt
    /// The end of the address range reserved for the map.
    var mapped: UInt
    var readOnly: Bool
    var writeMap: Bool

    /// The buffer `value` describes, checked.
    /// - Throws: `LMDBError.corrupted` naming `database` when it does not lie where pages are.
    func checked(_ value: MDB_val, in database: Database) throws(LMDBError) -> UnsafeRawBufferPointer {
        let buffer = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        guard let base = value.mv_data else { return buffer }
        let first = UInt(bitPattern: base)
        let (end, overflow) = first.addingReportingOverflow(UInt(value.mv_size))
        let inMap = first >= start && first < mapped
        let limit = !readOnly && writeMap ? mapped : used
        if overflow || (readOnly && !inMap) || (inMap && end > limit) {
            throw LMDBError(code: MDB_CORRUPTED, detail: "the \(database.name) database returned \(value.mv_size) bytes outside the data file's pages in use (a damaged page)")
        }
        return buffer
    }
}
