import Foundation
import LMDB

/// Entry writes inside a write transaction. Each keeps the record, the blob, both indexes and
/// the logical-bytes counter in step (the invariants in `StoreFormat.swift`).
extension DurableTier {
    func put(_ record: EntryRecord, data: Data, in txn: borrowing Transaction) throws {
        let existing = try locate(record.cacheKey, in: txn)
        let key = try existing?.key ?? freeSlot(for: record.cacheKey, in: txn)
        if let old = existing?.record { try removeIndexRows(of: old, key: key, in: txn) }
        try key.withUnsafeBytes { key in
            try txn.put(blobs, key: key, reserving: data.count) { destination in
                data.withUnsafeBytes { destination.copyMemory(from: $0) }
            }
        }
        try txn.put(entries, key: key, value: record.encoded())
        try addIndexRows(of: record, key: key, in: txn)
        try addLogicalBytes(data.count - (existing?.record.byteCount ?? 0), in: txn)
    }

    /// Replaces an entry's record (same bytes), moving its index rows.
    func update(_ record: EntryRecord, replacing old: EntryRecord, key: [UInt8], in txn: borrowing Transaction) throws {
        try removeIndexRows(of: old, key: key, in: txn)
        try txn.put(entries, key: key, value: record.encoded())
        try addIndexRows(of: record, key: key, in: txn)
    }

    /// Gives the entry `record` renews its new record, when the entry still holds the bytes
    /// it describes (same checksum and byte count); otherwise (replaced or removed since the
    /// renewal was logged) does nothing, as the log's later records already say what it is.
    func renew(_ record: EntryRecord, in txn: borrowing Transaction) throws {
        guard let (key, old) = try locate(record.cacheKey, in: txn),
              old.checksum == record.checksum, old.byteCount == record.byteCount else { return }
        try update(record, replacing: old, key: key, in: txn)
    }

    func remove(cacheKey: String, in txn: borrowing Transaction) throws {
        guard let (key, record) = try locate(cacheKey, in: txn) else { return }
        try remove(record, key: key, in: txn)
    }

    func remove(_ record: EntryRecord, key: [UInt8], in txn: borrowing Transaction) throws {
        try txn.delete(entries, key: key)
        try txn.delete(blobs, key: key)
        try removeIndexRows(of: record, key: key, in: txn)
        try addLogicalBytes(-record.byteCount, in: txn)
    }

    func removeAll(in txn: borrowing Transaction) throws {
        for database in [entries, blobs, expiry, access] { try txn.removeAll(database) }
        try txn.put(meta, key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(0)))
    }

    // MARK: - Index rows

    static func expiryRow(_ record: EntryRecord, key: [UInt8]) -> [UInt8]? {
        record.expiresAt.map { StoreFormat.timeKey($0) + key }
    }

    static func accessRow(_ record: EntryRecord, key: [UInt8]) -> [UInt8] {
        StoreFormat.timeKey(record.lastAccess) + key
    }

    private func addIndexRows(of record: EntryRecord, key: [UInt8], in txn: borrowing Transaction) throws {
        if let row = Self.expiryRow(record, key: key) { try txn.put(expiry, key: row, value: []) }
        try txn.put(access, key: Self.accessRow(record, key: key), value: [])
    }

    private func removeIndexRows(of record: EntryRecord, key: [UInt8], in txn: borrowing Transaction) throws {
        if let row = Self.expiryRow(record, key: key) { try txn.delete(expiry, key: row) }
        try txn.delete(access, key: Self.accessRow(record, key: key))
    }
}
