import CLMDB
import Synchronization

/// Read-only transactions kept between reads, so that a read renews one (`mdb_txn_renew`)
/// instead of allocating a new one and taking a new reader slot (`mdb_txn_begin`), and reuses
/// its cursors (`mdb_cursor_renew`) instead of allocating them.
///
/// A kept transaction is reset (`mdb_txn_reset`): under `MDB_NOTLS` it keeps its reader slot
/// but holds no snapshot (its slot shows `-`), so it pins no pages and never keeps a writer from
/// reusing them. Each read renews it, which takes the newest committed snapshot, so a
/// transaction that sat idle for an hour never serves an hour-old snapshot.
///
/// At most `capacity` transactions are kept: the pool costs that many reader slots of the
/// environment's table (shared by every process), and no more.
///
/// Lock-free: each slot is one atomic word on its own cache line, holding a kept reader or 0.
/// A thread starts at the slot its thread id hashes to, so threads reading at once mostly
/// touch different lines, and then tries the others in turn.
final class ReadTransactionPool: Sendable {
    /// Each slot holds a kept reader (its retained pointer's bits) or 0.
    private let slots: ThreadStripedAtomics
    /// How many transactions the pool keeps at most.
    var capacity: Int { slots.count }

    /// A pool of `capacity` slots (0: keeps nothing, every read begins a new transaction).
    init(capacity: Int) {
        slots = ThreadStripedAtomics(count: capacity)
    }

    deinit {
        // Invariant: the environment drained the pool before closing (`drain`).
        assert(slots.all(equal: 0), "a kept read transaction outlived its pool")
    }

    private func slot(_ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        slots.at(index)
    }

    /// A kept reader (reset, its cursors unbound), or nil when none is free.
    func take() -> KeptReader? {
        guard capacity > 0 else { return nil }
        let start = slots.home
        for offset in 0..<capacity {
            let bits = slot((start + offset) % capacity).pointee.exchange(0, ordering: .acquiring)
            if bits != 0 { return Unmanaged<KeptReader>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue() }
        }
        return nil
    }

    /// Keeps `reader` (already reset) for a later read; false when every slot is taken, and
    /// then the caller ends it.
    func give(_ reader: KeptReader) -> Bool {
        guard capacity > 0 else { return false }
        let bits = Int(bitPattern: Unmanaged.passRetained(reader).toOpaque())
        let start = slots.home
        for offset in 0..<capacity {
            if slot((start + offset) % capacity).pointee.compareExchange(expected: 0, desired: bits, ordering: .releasing).exchanged {
                return true
            }
        }
        Unmanaged<KeptReader>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        return false
    }

    /// Ends every kept transaction (freeing its reader slot). Only while no read of this
    /// process runs, before the environment closes: LMDB needs every transaction ended first.
    func drain() {
        while let reader = take() { reader.end() }
    }
}

/// One kept read-only transaction and the cursors it has opened, by database.
///
/// Used by one thread at a time: the one that took it from the pool (or created it) owns it
/// until it gives it back, and the pool's acquire/release hand-off orders its fields.
final class KeptReader {
    /// `MDB_txn*`, read-only.
    let handle: OpaquePointer
    // The owning thread alone touches these (see the type's comment), so no dynamic
    // exclusivity check is needed on every read: it cost more than the renewal itself.
    /// Cursors opened in this transaction, indexed by database handle; bound to it again
    /// (`mdb_cursor_renew`) each time one is lent out.
    @exclusivity(unchecked) private var cursors: [OpaquePointer?] = []
    /// Set when the transaction opened a database: its handle becomes usable by other
    /// transactions only if this one commits (a reset would close it, lmdb.h
    /// `mdb_dbi_open`), so such a transaction is committed and not kept.
    @exclusivity(unchecked) var openedDatabase = false
    /// Whether `end` ran (the transaction is freed).
    @exclusivity(unchecked) private var ended = false

    init(handle: OpaquePointer) { self.handle = handle }

    deinit {
        // Invariant: a kept reader is ended before it is dropped (its transaction freed).
        assert(ended, "a kept read transaction was dropped without being ended")
    }

    /// A cursor on `dbi` bound to the transaction's current snapshot. Give it back with
    /// `returnCursor`; a second caller meanwhile (a scan nested in a scan) gets a new one.
    func cursor(_ dbi: MDB_dbi) throws(LMDBError) -> OpaquePointer {
        let index = Int(dbi)
        if index < cursors.count, let cursor = cursors[index] {
            cursors[index] = nil
            let rc = mdb_cursor_renew(handle, cursor)
            if rc == 0 { return cursor }
            mdb_cursor_close(cursor)
            try check(rc)
        }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor))
        return cursor!
    }

    /// Keeps `cursor` (from `cursor(_:)`) for the next scan of its database.
    func returnCursor(_ cursor: OpaquePointer, _ dbi: MDB_dbi) {
        let index = Int(dbi)
        if index >= cursors.count { cursors += repeatElement(nil, count: index + 1 - cursors.count) }
        if let kept = cursors[index] { mdb_cursor_close(kept) }
        cursors[index] = cursor
    }

    /// Closes the cursors and aborts the transaction, freeing its reader slot.
    func end() {
        closeCursors()
        mdb_txn_abort(handle)
    }

    /// Closes the cursors of a transaction that was committed (which freed it).
    func endCommitted() { closeCursors() }

    private func closeCursors() {
        precondition(!ended, "a kept read transaction ended twice")
        ended = true
        // Read-only cursors may be closed before or after their transaction ends (lmdb.h).
        for cursor in cursors { if let cursor { mdb_cursor_close(cursor) } }
        cursors = []
    }
}
