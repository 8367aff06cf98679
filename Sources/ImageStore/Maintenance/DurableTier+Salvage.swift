import Foundation
import LMDB

/// `verify --repair` on a damaged B-tree: every entry that can still be read is copied into a
/// fresh LMDB environment, which `ImageStore.salvage` then swaps in the way compaction swaps in
/// its copy. What a damaged page hid is lost; nothing readable is.
extension DurableTier {
    /// What a salvage copied.
    struct SalvageCount {
        /// Entries copied whole (record, bytes matching its checksum, index rows rebuilt).
        var copied = 0
        /// Entries or bytes found but not whole: set aside in the new store's quarantine.
        var quarantined = 0
        /// Entry keys seen (in any database) whose record could not be read.
        var unreadable = 0
    }

    /// Candidate entry keys per read transaction while copying.
    private static let salvageBatch = 128

    /// Copies every readable entry of this environment into `fresh` (a new, empty store's
    /// environment whose databases are `freshDatabases`, opened in `databases`' order), with
    /// `appliedSequence` as its applied-seq. Reads tolerate damage; writes to `fresh` do not.
    ///
    /// Entry keys are collected from four trees: `entries` and `blobs` (scanned around damaged
    /// pages by key prefix: keys are hashes, so prefixes spread evenly) and the key suffixes of
    /// `access` and `expiry` rows, so one damaged page of one tree hides no entry the others
    /// still name. Each candidate is then read by key, as a lookup reads it.
    /// - Throws: errors writing `fresh`; errors reading this environment that are not damage.
    func salvage(into fresh: Environment, databases freshDatabases: [Database],
                 appliedSequence: UInt64, now: Int64) throws(ImageStoreError) -> SalvageCount {
        var candidates = try readableKeys(of: entries, probing: true)
        candidates.formUnion(try readableKeys(of: blobs, probing: true))
        for index in [access, expiry] {
            for row in try readableKeys(of: index, probing: false) where row.count == 8 + StoreFormat.entryKeyByteCount {
                candidates.insert(Array(row[8...]))
            }
        }
        var count = SalvageCount()
        var total = 0
        // A damaged page can yield keys of any length (node offsets or sizes garbled); no entry
        // has such a key, and the fresh store would refuse it (`MDB_BAD_VALSIZE` for 0 or more
        // than 511 bytes), failing the whole salvage.
        let ordered = candidates.filter { $0.count == StoreFormat.entryKeyByteCount }.sorted { $0.lexicographicallyPrecedes($1) }
        for start in stride(from: 0, to: ordered.count, by: Self.salvageBatch) {
            let batch = ordered[start..<min(start + Self.salvageBatch, ordered.count)]
            var found: [Found] = []
            for key in batch { found.append(try readEntry(key)) }
            try write(fresh, "copying readable entries") { txn in
                for (key, found) in zip(batch, found) {
                    switch found {
                    case let .whole(record, recordBytes, blob):
                        try txn.put(freshDatabases[1], key: key, value: recordBytes)
                        try txn.put(freshDatabases[2], key: key, value: blob)
                        if let row = Self.expiryRow(record, key: key) { try txn.put(freshDatabases[3], key: row, value: []) }
                        try txn.put(freshDatabases[4], key: Self.accessRow(record, key: key), value: [])
                        total += record.byteCount
                        count.copied += 1
                    case let .partial(kind, recordBytes, blob):
                        try txn.put(freshDatabases[5], key: StoreFormat.timeKey(now) + key,
                                    value: Self.quarantineValue(kind, record: recordBytes, blob: blob))
                        count.quarantined += 1
                    case .unreadable:
                        count.unreadable += 1
                    }
                }
            }
        }
        // What was quarantined before stays quarantined, as far as it can be read.
        let quarantined = try readableRows(of: quarantine)
        try write(fresh, "copying the quarantine") { txn in
            for (key, value) in quarantined { try txn.put(freshDatabases[5], key: key, value: value) }
            try txn.put(freshDatabases[0], key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(total)))
            try txn.put(freshDatabases[0], key: StoreFormat.appliedSequenceKey, value: Self.encode(appliedSequence))
        }
        return count
    }

    /// Applies log records `batch` to `fresh` (a salvage's data file, its databases
    /// `freshDatabases`), as the applier applies them to this environment.
    /// - Throws: errors writing `fresh`.
    func replay(_ batch: [SequencedEntry], into fresh: Environment, databases freshDatabases: [Database]) throws(ImageStoreError) {
        // Invariant: `fresh` numbers its databases as this environment does (opened in the same
        // order), so this tier's database handles name the same databases in `fresh`.
        precondition(freshDatabases == databases, "a salvage's databases are opened in the store's order")
        try write(fresh, "replaying the log into the fresh data file") { txn in try apply(batch, in: txn) }
    }

    /// One candidate key's entry as it could be read.
    private enum Found {
        case whole(EntryRecord, [UInt8], [UInt8])
        case partial(VerifyProblem.Kind, record: [UInt8], blob: [UInt8])
        case unreadable
    }

    /// - Throws: read errors that are not damage.
    private func readEntry(_ key: [UInt8]) throws(ImageStoreError) -> Found {
        // Record and bytes in separate reads: damage in one tree must not hide the other.
        let recordBytes = try tolerating { () throws(ImageStoreError) in
            try reading("salvaging an entry") { txn in try txn.get(entries, key: key).map(Array.init) }
        } ?? nil
        let blob = try tolerating { () throws(ImageStoreError) in
            try reading("salvaging an entry's bytes") { txn in try txn.get(blobs, key: key).map(Array.init) }
        } ?? nil
        guard let recordBytes else { return blob.map { .partial(.orphanBlob, record: [], blob: $0) } ?? .unreadable }
        guard let record = recordBytes.withUnsafeBytes({ EntryRecord(decoding: $0) }) else {
            return .partial(.malformedRecord, record: recordBytes, blob: blob ?? [])
        }
        guard let blob else { return .partial(.missingBlob, record: recordBytes, blob: []) }
        guard blob.count == record.byteCount, blob.withUnsafeBytes({ Checksum.blob($0) }) == record.checksum else {
            return .partial(.checksumMismatch, record: recordBytes, blob: blob)
        }
        guard key.starts(with: keyHasher(record.cacheKey)) else { return .partial(.wrongKey, record: recordBytes, blob: blob) }
        return .whole(record, recordBytes, blob)
    }

    /// `body`'s result, or nil when it met damage (`corruptStore`); other errors are thrown.
    private func tolerating<R>(_ body: () throws(ImageStoreError) -> R) throws(ImageStoreError) -> R? {
        do { return try body() } catch {
            guard case .corruptStore = error else { throw error }
            return nil
        }
    }

    /// The keys of `database` that can be read. A scan that meets damage keeps what it read;
    /// with `probing`, the key space is then scanned again one first byte at a time, and each
    /// first byte that meets damage one second byte at a time, so only keys whose own pages
    /// are damaged stay unread.
    private func readableKeys(of database: Database, probing: Bool) throws(ImageStoreError) -> Set<[UInt8]> {
        var keys = Set<[UInt8]>()
        if try scanRange(database, from: [], below: nil, into: &keys) || !probing { return keys }
        for first in 0...255 {
            let prefix = [UInt8(first)]
            if try scanRange(database, from: prefix, below: first < 255 ? [UInt8(first + 1)] : nil, into: &keys) { continue }
            for second in 0...255 {
                let below: [UInt8]? = second < 255 ? prefix + [UInt8(second + 1)] : (first < 255 ? [UInt8(first + 1)] : nil)
                _ = try scanRange(database, from: prefix + [UInt8(second)], below: below, into: &keys)
            }
        }
        return keys
    }

    /// The rows of `database` that one scan reads before any damage.
    private func readableRows(of database: Database) throws(ImageStoreError) -> [([UInt8], [UInt8])] {
        var rows: [([UInt8], [UInt8])] = []
        _ = try tolerating { () throws(ImageStoreError) in
            try reading("salvaging \(database.name)") { txn in
                try txn.scan(database) { key, value in
                    rows.append((Array(key), Array(value)))
                    return true
                }
            }
        }
        return rows
    }

    /// Adds the keys in [`start`, `end`) to `keys`; false when damage stopped the scan.
    /// - Throws: read errors that are not damage.
    private func scanRange(_ database: Database, from start: [UInt8], below end: [UInt8]?,
                           into keys: inout Set<[UInt8]>) throws(ImageStoreError) -> Bool {
        var found: [[UInt8]] = []
        defer { keys.formUnion(found) }
        let finished: Void? = try tolerating { () throws(ImageStoreError) in
            try reading("salvaging \(database.name)") { txn in
                try start.withUnsafeBytes { startBytes in
                    _ = try txn.scan(database, from: start.isEmpty ? nil : startBytes) { key, _ in
                        if let end, !key.lexicographicallyPrecedes(end) { return false }
                        found.append(Array(key))
                        return true
                    }
                }
            }
        }
        return finished != nil
    }

    /// A write transaction on `fresh`, which no other code uses (so not the writer queue's).
    private func write(_ fresh: Environment, _ operation: String, _ body: (borrowing Transaction) throws -> Void) throws(ImageStoreError) {
        do { try fresh.write(body) } catch {
            throw .from(error, path: fresh.path, operation: operation, maxMapSize: maxMapSize)
        }
    }

    /// A quarantine row's value (`StoreFormat.swift`): the problem's kind, the record's
    /// length, the record, the image bytes as found.
    static func quarantineValue(_ kind: VerifyProblem.Kind, record: [UInt8], blob: [UInt8]) -> [UInt8] {
        var value: [UInt8] = [UInt8(VerifyProblem.Kind.allCases.firstIndex(of: kind)!)]
        withUnsafeBytes(of: UInt32(record.count).littleEndian) { value.append(contentsOf: $0) }
        return value + record + blob
    }
}
