import Foundation
import LMDB

/// What the disk budget will measure for a put before it is logged, so a put the budget would
/// evict as soon as it is applied is refused instead (`ImageStoreError.entryOverDiskBudget`).
extension DurableTier {
    /// Bytes of pages the budget (`budgetedBytes`) measures for the store holding only `record`
    /// and its `blobBytes`: the least this entry takes once eviction has removed every other.
    /// An upper bound, counted page by page as LMDB lays it out:
    /// - the store's own pages: the two meta pages, the main database's leaf (it names the six
    ///   databases), and the `meta` database's pages as they are now;
    /// - the entry's: a leaf in `entries`, `blobs` and `access` (and `expiry` when it expires),
    ///   plus overflow pages for a record or blob too large for a leaf node.
    /// The free list's own pages are not counted (`budgetedBytes` leaves them out, as they
    /// grow with what eviction freed), nor the quarantine's.
    /// - Throws: `storage` or `corruptStore` when LMDB cannot be read.
    func budgetFootprint(of record: EntryRecord, blobBytes: Int) throws(ImageStoreError) -> Int {
        let pageSize: Int
        let metaPages: Int
        do {
            pageSize = try environment.statistics().pageSize
            metaPages = try environment.read { txn in try txn.statistics(meta).pages }
        } catch {
            throw .from(error, path: path, operation: "measuring the disk budget", maxMapSize: maxMapSize)
        }
        let key = StoreFormat.entryKeyByteCount
        let ownPages = 2 + 1 + max(metaPages, 1)
        let entryPages = 1 + Self.overflowPages(key: key, value: record.encoded().count, pageSize: pageSize)
            + 1 + Self.overflowPages(key: key, value: blobBytes, pageSize: pageSize)
            + 1 + (record.expiresAt == nil ? 0 : 1)
        return (ownPages + entryPages) * pageSize
    }

    /// Overflow pages LMDB gives a value stored under a key of `key` bytes: none when the node
    /// (8-byte header, key, value) fits a leaf's `nodemax` (half a page less its headers), else
    /// enough pages for the value and one page header (lmdb.h's `OVPAGES`).
    static func overflowPages(key: Int, value: Int, pageSize: Int) -> Int {
        let pageHeader = 16
        let nodeMax = (((pageSize - pageHeader) / 2) & ~1) - 2
        guard 8 + key + value > nodeMax else { return 0 }
        return (pageHeader + value + pageSize - 1) / pageSize
    }
}
