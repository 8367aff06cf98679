import LMDB

/// The check that keeps a damaged tree from acknowledging writes it cannot apply.
extension DurableTier {
    /// Walks, in a read transaction, the B-tree paths the applier will take when it applies a
    /// put (of `record`) or a remove of `cacheKey`: the entry's slot, its bytes, its index rows
    /// and the counter. The write path logs — acknowledges — a write only after this passes, so
    /// a store whose tree is damaged on that path refuses the write with `corruptStore` instead
    /// of acknowledging one that would then stop the applier and every later open as the writer.
    ///
    /// Damage beside the path (a neighbour a rebalance or split reads) or on LMDB's free list
    /// (which every commit reads) stops every write: `checkStructure` found it at the open.
    /// - Throws: `corruptStore` (LMDB's damage codes, keys out of order, a buffer outside the file;
    ///   a damaged free list).
    func checkWritable(cacheKey: String, record: EntryRecord?) throws(ImageStoreError) {
        try checkAcceptingWrites()
        try reading("checking that the store can take the write") { txn in
            let existing = try locate(cacheKey, in: txn)
            let key = try existing?.key ?? freeSlot(for: cacheKey, in: txn)
            _ = try txn.get(blobs, key: key)
            for touched in [existing?.record, record].compactMap({ $0 }) {
                if let row = Self.expiryRow(touched, key: key) { try Self.descend(to: row, of: expiry, in: txn) }
                try Self.descend(to: Self.accessRow(touched, key: key), of: access, in: txn)
            }
            _ = try logicalBytes(in: txn)
        }
    }

    /// Whether damage found by `checkStructure` stops every write (until a salvage).
    var isRefusingWrites: Bool { writeRefusal.withLock { $0 != nil } }

    /// Throws `writeRefusal`, the damage that stops every write, if there is one: the check
    /// every write (a `removeAll` too) makes before it is logged. One lock, no I/O.
    func checkAcceptingWrites() throws(ImageStoreError) {
        if let refusal = writeRefusal.withLock({ $0 }) { throw refusal }
        // Fail-stop after a failed LMDB sync (WALFormat.swift): commits are unsynced between
        // checkpoints, and no later checkpoint may be trusted to have made them durable.
        if let failure = environment.syncFailure.withLock({ $0 }) as? ImageStoreError { throw failure }
    }

    /// Checks LMDB's free list and every tree a write can touch (`Transaction.checkStructure`:
    /// the main database and all of the store's), setting or clearing `writeRefusal`. Every
    /// commit reads the free list, and a write's rebalance or split may read any neighbour of
    /// its path, so when either is damaged an acknowledged write might not be appliable: the
    /// store then refuses every write with `corruptStore` before logging it, and reads (which
    /// read only their own path) go on. Run at a writable open and after a salvage replaced the
    /// data file. It reads every branch and leaf page, no overflow page.
    ///
    /// Invariant: while `writeRefusal` is nil, this check passed on the data file the writer
    /// applies to, so the pages any write's commit reads were found well formed.
    /// - Throws: errors that are not damage (`storage`: an I/O error reading it).
    func checkStructure() throws(ImageStoreError) {
        do {
            try reading("checking LMDB's free list and trees") { txn in try txn.checkStructure(of: databases) }
            writeRefusal.withLock { $0 = nil }
        } catch {
            guard case let .corruptStore(path, detail) = error else { throw error }
            let refusal = ImageStoreError.corruptStore(
                path: path, detail: "\(detail); every write is refused (reads go on): run `imgstore-admin verify --repair`, which copies the readable entries into a fresh data file")
            writeRefusal.withLock { $0 = refusal }
        }
    }

    /// Walks from the root of `database` to the leaf where `key` is or would go.
    private static func descend(to key: [UInt8], of database: Database, in txn: borrowing Transaction) throws {
        try key.withUnsafeBytes { key in _ = try txn.scan(database, from: key) { _, _ in false } }
    }
}
