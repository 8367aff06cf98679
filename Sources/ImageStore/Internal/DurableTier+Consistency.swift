import Foundation
import LMDB

/// The invariants of `StoreFormat.swift`, checked over one snapshot: the base of
/// `imgstore-admin verify` and of every test's final check.
extension DurableTier {
    /// One broken invariant: what is wrong, and the entry (URL) or key it concerns.
    struct Problem: Sendable, Hashable, CustomStringConvertible {
        enum Kind: String, Sendable, CaseIterable {
            case malformedRecord = "malformed-record"
            case missingBlob = "missing-blob"
            case orphanBlob = "orphan-blob"
            case checksumMismatch = "checksum-mismatch"
            case missingIndexRow = "missing-index-row"
            case danglingIndexRow = "dangling-index-row"
            case wrongCounter = "wrong-counter"
        }
        var kind: Kind
        var subject: String
        var detail: String
        var description: String { "\(kind.rawValue): \(subject): \(detail)" }
    }

    /// Checks every entry against its blob, indexes and the counters. With `checksums`, also
    /// re-hashes every blob (reads every byte); `onEntry` is called per entry, for progress.
    func consistencyProblems(checksums: Bool, onEntry: (Int) -> Void = { _ in }) throws(ImageStoreError) -> [Problem] {
        try reading("checking consistency") { txn in
            var problems: [Problem] = []
            var expectedExpiry = Set<[UInt8]>()
            var expectedAccess = Set<[UInt8]>()
            var entryKeys = Set<[UInt8]>()
            var logical = 0
            var visited = 0
            try txn.scan(entries) { key, value in
                let keyBytes = Array(key)
                entryKeys.insert(keyBytes)
                visited += 1
                onEntry(visited)
                guard let record = EntryRecord(decoding: value) else {
                    problems.append(Problem(kind: .malformedRecord, subject: Self.hex(key), detail: "the metadata record cannot be decoded"))
                    return true
                }
                logical += record.byteCount
                if let row = Self.expiryRow(record, key: keyBytes) { expectedExpiry.insert(row) }
                expectedAccess.insert(Self.accessRow(record, key: keyBytes))
                guard let blob = try txn.get(blobs, key: key) else {
                    problems.append(Problem(kind: .missingBlob, subject: record.url, detail: "the entry has no image bytes"))
                    return true
                }
                if blob.count != record.byteCount || (checksums && Checksum.blob(blob) != record.checksum) {
                    problems.append(Problem(kind: .checksumMismatch, subject: record.url,
                                            detail: "the stored bytes do not match the entry's size and checksum"))
                }
                return true
            }
            try txn.scan(blobs) { key, _ in
                if !entryKeys.contains(Array(key)) {
                    problems.append(Problem(kind: .orphanBlob, subject: Self.hex(key), detail: "image bytes without an entry"))
                }
                return true
            }
            for (index, expected) in [(expiry, expectedExpiry), (access, expectedAccess)] {
                var seen = Set<[UInt8]>()
                try txn.scan(index) { row, _ in
                    let bytes = Array(row)
                    seen.insert(bytes)
                    if !expected.contains(bytes) {
                        problems.append(Problem(kind: .danglingIndexRow, subject: index.name + " " + Self.hex(row),
                                                detail: "the \(index.name) index names an entry that does not exist or has another time"))
                    }
                    return true
                }
                for missing in expected.subtracting(seen) {
                    problems.append(Problem(kind: .missingIndexRow, subject: index.name + " " + Self.hex(missing),
                                            detail: "an entry has no row in the \(index.name) index"))
                }
            }
            let counted = try logicalBytes(in: txn)
            if counted != logical {
                problems.append(Problem(kind: .wrongCounter, subject: "logical-bytes",
                                        detail: "the counter says \(counted) bytes, the entries hold \(logical)"))
            }
            return problems
        }
    }
}
