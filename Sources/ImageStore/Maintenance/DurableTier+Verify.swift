import Foundation
import ImageValidation
import LMDB

/// `verify`: the invariants of `StoreFormat.swift`, checked in chunks of short read
/// transactions so a long verify never pins old pages for long (LMDB cannot reuse pages freed
/// while a read transaction is open). Every cross-check is made inside one transaction, so a
/// writer working between chunks cannot cause a false report.
extension DurableTier {
    /// A problem and what repairing it means.
    struct Finding {
        enum Fix { case quarantineEntry, quarantineBlob, rebuildIndexes, recomputeCounter, none }
        var problem: VerifyProblem
        var entryKey: [UInt8]?
        var fix: Fix
    }

    struct VerifyOptions {
        var checksums = true
        var validation: ValidationMode? = .structure
        var chunkSize = 512
        var onProgress: (Int) -> Void = { _ in }
        /// The configuration's key function (`Configuration.keyFunction`), when there is one: an
        /// entry's cache key must then be this of its URL. Without it, a record whose cache key
        /// differs from its URL cannot be re-derived, and only its key's hash is checked.
        var keyFunction: (@Sendable (String) -> String)?
    }

    /// Checks every entry, blob, index row and counter; returns what is wrong.
    func verify(_ options: VerifyOptions) throws(ImageStoreError) -> (findings: [Finding], entries: Int) {
        var findings: [Finding] = []
        var checked = 0
        let validator = ImageValidator()
        try forEachChunk(of: entries, size: options.chunkSize) { txn, key, value in
            checked += 1
            options.onProgress(checked)
            let keyBytes = Array(key)
            guard let record = EntryRecord(decoding: value) else {
                findings.append(Finding(problem: problem(.malformedRecord, Self.hex(key), "its metadata record cannot be decoded"),
                                        entryKey: keyBytes, fix: .quarantineEntry))
                return
            }
            if keyBytes.count != StoreFormat.entryKeyByteCount || !keyBytes.starts(with: keyHasher(record.cacheKey)) {
                findings.append(Finding(problem: problem(.wrongKey, record.url, "the entry's key \(Self.hex(key)) is not the hash of its URL, so no lookup reaches it"),
                                        entryKey: keyBytes, fix: .quarantineEntry))
            } else if let keyFunction = options.keyFunction, keyFunction(record.url) != record.cacheKey {
                findings.append(Finding(problem: problem(.wrongKey, record.url, "the entry's cache key is not the configured key function's of its URL, so no lookup reaches it"),
                                        entryKey: keyBytes, fix: .quarantineEntry))
            }
            guard let blob = try txn.get(blobs, key: key) else {
                findings.append(Finding(problem: problem(.missingBlob, record.url, "the entry has no image bytes"), entryKey: keyBytes, fix: .quarantineEntry))
                return
            }
            if blob.count != record.byteCount || (options.checksums && Checksum.blob(blob) != record.checksum) {
                findings.append(Finding(problem: problem(.checksumMismatch, record.url, "the stored bytes do not match the entry's size and checksum"),
                                        entryKey: keyBytes, fix: .quarantineEntry))
            } else if let mode = options.validation, let facts = record.facts {
                do {
                    let found = try validator.validate(blob, mode: mode)
                    if found.width != facts.width || found.height != facts.height || found.format != facts.format {
                        findings.append(Finding(problem: problem(.invalidImage, record.url, "the bytes decode as a different image than recorded"),
                                                entryKey: keyBytes, fix: .quarantineEntry))
                    }
                } catch let error as ImageValidationError {
                    // Deep mode's rule for images it cannot decode (12-bit JPEG …) lives in the validator.
                    findings.append(Finding(problem: problem(.invalidImage, record.url, error.description), entryKey: keyBytes, fix: .quarantineEntry))
                }
            }
            if let row = Self.expiryRow(record, key: keyBytes), try txn.get(expiry, key: row) == nil {
                findings.append(Finding(problem: problem(.missingIndexRow, record.url, "no row in the expiry index"), entryKey: keyBytes, fix: .rebuildIndexes))
            }
            if try txn.get(access, key: Self.accessRow(record, key: keyBytes)) == nil {
                findings.append(Finding(problem: problem(.missingIndexRow, record.url, "no row in the access index"), entryKey: keyBytes, fix: .rebuildIndexes))
            }
        }
        try forEachChunk(of: blobs, size: options.chunkSize) { txn, key, _ in
            if try txn.get(entries, key: key) == nil {
                findings.append(Finding(problem: problem(.orphanBlob, Self.hex(key), "image bytes without an entry"), entryKey: Array(key), fix: .quarantineBlob))
            }
        }
        for index in [expiry, access] {
            try forEachChunk(of: index, size: options.chunkSize) { txn, row, _ in
                let named = row.count == 8 + StoreFormat.entryKeyByteCount
                    ? try txn.get(entries, key: UnsafeRawBufferPointer(rebasing: row[8...])).flatMap(EntryRecord.init(decoding:)) : nil
                let time = row.count >= 8 ? StoreFormat.time(ofIndexKey: row) : nil
                let expected = index == expiry ? named?.expiresAt : named?.lastAccess
                if named == nil || expected != time {
                    findings.append(Finding(
                        problem: problem(.danglingIndexRow, index.name + " " + Self.hex(row),
                                         "the \(index.name) index row names \(named.map { "\($0.url) with another time" } ?? "no entry")"),
                        entryKey: nil, fix: .rebuildIndexes))
                }
            }
        }
        // What a writer checks before it takes writes (`checkStructure`): damage there stops
        // all writes, so verify reports it and `--repair` salvages.
        try reading("checking LMDB's free list and trees") { txn in try txn.checkStructure(of: databases) }
        let (counted, summed) = try reading("checking counters") { txn in
            var sum = 0
            try txn.scan(entries) { _, value in
                sum += EntryRecord(decoding: value)?.byteCount ?? 0
                return true
            }
            return (try logicalBytes(in: txn), sum)
        }
        if counted != summed {
            findings.append(Finding(problem: problem(.wrongCounter, "logical-bytes", "the counter says \(counted) bytes, the entries hold \(summed)"),
                                    entryKey: nil, fix: .recomputeCounter))
        }
        return (findings, checked)
    }

    private func problem(_ kind: VerifyProblem.Kind, _ subject: String, _ detail: String) -> VerifyProblem {
        VerifyProblem(kind: kind, subject: subject, detail: detail, repaired: false)
    }

    /// Visits every row of `database` in key order, `size` rows per read transaction.
    private func forEachChunk(
        of database: Database, size: Int,
        _ body: (borrowing Transaction, UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void
    ) throws(ImageStoreError) {
        var last: [UInt8]?
        while true {
            let next: [UInt8]? = try reading("verifying \(database.name)") { txn in
                var seen = 0
                var lastKey: [UInt8]?
                let start = last
                try ImageStoreError.rethrowing(path: path, operation: "verifying \(database.name)") {
                    try (start ?? [0]).withUnsafeBytes { startBytes in
                        _ = try txn.scan(database, from: start == nil ? nil : startBytes) { key, value in
                            if let start, key.elementsEqual(start) { return true }  // resume after it
                            guard seen < size else { return false }
                            try body(txn, key, value)
                            seen += 1
                            lastKey = Array(key)
                            return true
                        }
                    }
                }
                return seen == size ? lastKey : nil
            }
            guard let next else { return }
            last = next
        }
    }

    // MARK: - Repair

    /// Fixes what `verify` found, in one write transaction: bad entries and orphan bytes go to
    /// the quarantine (never deleted silently), indexes are rebuilt from the entries, counters
    /// recomputed. Runs on the writer queue. Returns the cache keys it removed.
    func repair(_ findings: [Finding], now: Int64) throws(ImageStoreError) -> [String] {
        try writing("repairing") { txn in
            var removed: [String] = []
            var quarantined = Set<[UInt8]>()
            for finding in findings {
                guard let key = finding.entryKey, !quarantined.contains(key) else { continue }
                switch finding.fix {
                case .quarantineEntry, .quarantineBlob:
                    quarantined.insert(key)
                    let record = try txn.get(entries, key: key).map(Array.init) ?? []
                    let blob = try txn.get(blobs, key: key).map(Array.init) ?? []
                    try txn.put(quarantine, key: StoreFormat.timeKey(now) + key,
                                value: Self.quarantineValue(finding.problem.kind, record: record, blob: blob))
                    try txn.delete(entries, key: key)
                    try txn.delete(blobs, key: key)
                    if let decoded = record.withUnsafeBytes({ EntryRecord(decoding: $0) }) { removed.append(decoded.cacheKey) }
                default: break
                }
            }
            // Indexes and the counter are derived from the entries: rebuild them whole.
            try txn.removeAll(expiry)
            try txn.removeAll(access)
            var total = 0
            var rows: [[UInt8]] = []
            var accessRows: [[UInt8]] = []
            try txn.scan(entries) { key, value in
                guard let record = EntryRecord(decoding: value) else { return true }
                total += record.byteCount
                if let row = Self.expiryRow(record, key: Array(key)) { rows.append(row) }
                accessRows.append(Self.accessRow(record, key: Array(key)))
                return true
            }
            for row in rows { try txn.put(expiry, key: row, value: []) }
            for row in accessRows { try txn.put(access, key: row, value: []) }
            try txn.put(meta, key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(total)))
            return removed
        }
    }

    // MARK: - Quarantine

    /// What the quarantine holds: when, why, the URL when its record survived, and bytes kept.
    func quarantineContents() throws(ImageStoreError) -> [QuarantinedEntry] {
        try reading("listing the quarantine") { txn in
            var found: [QuarantinedEntry] = []
            try txn.scan(quarantine) { key, value in
                let reader = ByteReader(bytes: value)
                let kindIndex = Int(reader.integer(at: 0, as: UInt8.self) ?? 0)
                let recordLength = Int(reader.integer(at: 1, as: UInt32.self) ?? 0)
                let record = 5 + recordLength <= value.count
                    ? EntryRecord(decoding: UnsafeRawBufferPointer(rebasing: value[5..<(5 + recordLength)])) : nil
                found.append(QuarantinedEntry(
                    quarantinedAt: Date(timeIntervalSince1970: Double(StoreFormat.time(ofIndexKey: key)) / 1000),
                    reason: VerifyProblem.Kind.allCases[min(kindIndex, VerifyProblem.Kind.allCases.count - 1)],
                    url: record?.url, bytes: max(0, value.count - 5 - recordLength)))
                return true
            }
            return found
        }
    }

    /// Deletes everything in the quarantine; returns how many it held.
    func purgeQuarantine() throws(ImageStoreError) -> Int {
        try writing("purging the quarantine") { txn in
            let count = try txn.statistics(quarantine).entries
            try txn.removeAll(quarantine)
            return count
        }
    }
}

/// An entry `verify --repair` set aside.
public struct QuarantinedEntry: Sendable, Hashable {
    public var quarantinedAt: Date
    public var reason: VerifyProblem.Kind
    /// The entry's URL, when its metadata record could be read.
    public var url: String?
    /// Image bytes kept with it.
    public var bytes: Int
}
