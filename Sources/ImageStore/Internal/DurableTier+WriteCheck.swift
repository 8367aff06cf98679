import LMDB

/// The check that keeps a damaged tree from acknowledging writes it cannot apply.
extension DurableTier {
    /// Walks, in a read transaction, the B-tree paths the applier will take when it applies a
    /// put (of `record`) or a remove of `cacheKey`: the entry's slot, its bytes, its index rows
    /// and the counter. The write path logs — acknowledges — a write only after this passes, so
    /// a store whose tree is damaged on that path refuses the write with `corruptStore` instead
    /// of acknowledging one that would then stop the applier and every later open as the writer.
    ///
    /// Damage elsewhere (a page the write never reads) does not stop the write: it can be applied.
    /// - Throws: `corruptStore` (LMDB's damage codes, keys out of order, a buffer outside the file).
    func checkWritable(cacheKey: String, record: EntryRecord?) throws(ImageStoreError) {
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

    /// Walks from the root of `database` to the leaf where `key` is or would go.
    private static func descend(to key: [UInt8], of database: Database, in txn: borrowing Transaction) throws {
        try key.withUnsafeBytes { key in try txn.scan(database, from: key) { _, _ in false } }
    }
}
