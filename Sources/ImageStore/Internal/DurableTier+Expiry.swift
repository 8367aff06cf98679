import Foundation
import LMDB

/// Expiry sweeps, budget eviction and access-time persistence: the writes the store derives
/// itself (not logged: each is re-derivable after a crash). All run on the writer queue, in
/// batches of short transactions so they never hold the writer for long.
extension DurableTier {
    /// Entries removed by a sweep or an eviction.
    struct Removal {
        var cacheKeys: [String] = []
        var bytes = 0
        var batches = 0
    }

    /// Deletes every entry whose expiry is at or before `now`, `batchSize` per transaction,
    /// visiting only expired rows of the `expiry` index. With `dryRun`, counts without deleting.
    func sweepExpired(now: Int64, batchSize: Int, dryRun: Bool) throws(ImageStoreError) -> Removal {
        var removal = Removal()
        if dryRun {
            let (count, bytes) = try expiredSummary(now: now)
            removal.cacheKeys = Array(repeating: "", count: count)
            removal.bytes = bytes
            return removal
        }
        while true {
            let removed = try removeBatch(from: expiry, limit: batchSize, operation: "sweeping expired entries") { time, _ in
                time <= now
            }
            if removed.isEmpty { return removal }
            removal.cacheKeys += removed.map(\.cacheKey)
            removal.bytes += removed.reduce(0) { $0 + $1.byteCount }
            removal.batches += 1
        }
    }

    /// Evicts least recently accessed entries until the pages the budget counts
    /// (`budgetedBytes`) are at most `targetBytes`. Each transaction removes at most
    /// `batchSize` entries and stops once their bytes cover the excess it measured before it
    /// began, so a store holding fewer entries than a batch loses only as many as the budget
    /// needs, never the entries just applied with them. The excess is measured again after
    /// each transaction (an entry frees a little more than its bytes, or less when its pages
    /// are shared), until the store is under the target.
    func evict(downTo targetBytes: Int, batchSize: Int) throws(ImageStoreError) -> Removal {
        var removal = Removal()
        while true {
            let excess = try budgetedBytes() - targetBytes
            guard excess > 0 else { break }
            let removed = try removeBatch(from: access, limit: batchSize, stopAfterBytes: excess,
                                          operation: "evicting for the disk budget") { _, _ in true }
            if removed.isEmpty { break }
            removal.cacheKeys += removed.map(\.cacheKey)
            removal.bytes += removed.reduce(0) { $0 + $1.byteCount }
            removal.batches += 1
        }
        return removal
    }

    /// Removes, in one transaction, up to `limit` entries named by the first rows of `index`
    /// for which `include(time, entryKey)` holds (rows are visited in time order, and the
    /// scan stops at the first that does not). With `stopAfterBytes`, it stops once the
    /// removed entries' bytes reach that many.
    private func removeBatch(from index: Database, limit: Int, stopAfterBytes: Int? = nil, operation: String,
                             include: (Int64, UnsafeRawBufferPointer) -> Bool) throws(ImageStoreError) -> [EntryRecord] {
        try writing(operation) { txn in
            var victims: [(row: [UInt8], key: [UInt8])] = []
            try txn.scan(index) { row, _ in
                guard victims.count < limit, row.count == 8 + StoreFormat.entryKeyByteCount,
                      include(StoreFormat.time(ofIndexKey: row), UnsafeRawBufferPointer(rebasing: row[8...]))
                else { return false }
                victims.append((Array(row), Array(row[8...])))
                return true
            }
            var removed: [EntryRecord] = []
            var removedBytes = 0
            for victim in victims {
                if let stopAfterBytes, removedBytes >= stopAfterBytes { break }
                guard let value = try txn.get(entries, key: victim.key), let record = EntryRecord(decoding: value) else {
                    try txn.delete(index, key: victim.row)  // a row for an entry that is gone
                    continue
                }
                try remove(record, key: victim.key, in: txn)
                removed.append(record)
                removedBytes += record.byteCount
            }
            return removed
        }
    }

    /// Writes last-access times (and, for sliding entries, the expiry they extend) collected
    /// in memory, in one transaction. Entries since removed are skipped. Returns the cache keys
    /// whose expiry moved, for the memory tier to drop its copies (which hold the old expiry).
    func persistAccess(_ times: [String: Int64]) throws(ImageStoreError) -> [String] {
        guard !times.isEmpty else { return [] }
        return try writing("persisting access times") { txn in
            var slid: [String] = []
            for (cacheKey, time) in times {
                guard let (key, old) = try locate(cacheKey, in: txn), old.lastAccess < time else { continue }
                var record = old
                record.lastAccess = time
                // Reads are only noted while the entry is fresh, so each one slides it.
                if old.slidingSeconds > 0, let expiresAt = old.expiresAt {
                    record.expiresAt = max(expiresAt, time + Int64(old.slidingSeconds) * 1000)
                    if record.expiresAt != expiresAt { slid.append(cacheKey) }
                }
                try update(record, replacing: old, key: key, in: txn)
            }
            return slid
        }
    }

    /// Entries expired at `now` but not yet swept, and their bytes, from the `expiry` index.
    func expiredSummary(now: Int64) throws(ImageStoreError) -> (count: Int, bytes: Int) {
        try reading("counting expired entries") { txn in
            var count = 0
            var bytes = 0
            try txn.scan(expiry) { row, _ in
                guard row.count == 8 + StoreFormat.entryKeyByteCount, StoreFormat.time(ofIndexKey: row) <= now else { return false }
                if let value = try txn.get(entries, key: UnsafeRawBufferPointer(rebasing: row[8...])),
                   let record = EntryRecord(decoding: value) {
                    count += 1
                    bytes += record.byteCount
                }
                return true
            }
            return (count, bytes)
        }
    }

    /// Bytes of LMDB pages holding data: pages in use minus pages on the free list and the
    /// free list's own pages (the records listing them).
    func occupiedBytes() throws(ImageStoreError) -> Int { try pageUse().occupied }

    /// Bytes the disk budget (`Configuration.maxDiskBytes`) counts: pages holding data, minus
    /// the quarantine's. What `verify --repair` set aside is excluded rather than evicted for:
    /// it stays until purged (`imgstore-admin quarantine --purge`, `compact --purge-quarantine`),
    /// so a large quarantine can never push the cache out. The free list's own pages are not
    /// data either: they grow with what was freed (about 20 KB after evicting 10 MB), so
    /// counting them made eviction from a large store go on to evict the entry just put, which
    /// the put's check (`budgetFootprint`) had found to fit.
    func budgetedBytes() throws(ImageStoreError) -> Int {
        let use = try pageUse()
        return use.occupied - use.quarantined
    }

    private func pageUse() throws(ImageStoreError) -> (occupied: Int, quarantined: Int) {
        do {
            let stats = try environment.statistics()
            let (free, freeList, quarantined) = try environment.read { txn in
                (try txn.freePageCount(), try txn.freeListStatistics().pages, try txn.statistics(quarantine).pages)
            }
            return (stats.usedBytes - (free + freeList) * stats.pageSize, quarantined * stats.pageSize)
        } catch {
            throw .from(error, path: path, operation: "measuring disk use", maxMapSize: maxMapSize)
        }
    }
}
