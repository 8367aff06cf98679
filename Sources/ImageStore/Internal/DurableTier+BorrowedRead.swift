import Foundation
import LMDB

extension DurableTier {
    /// Calls `body` with the record stored for `cacheKey` and its bytes as LMDB maps them,
    /// verified against the record's checksum first, inside one read transaction; nil (and
    /// `body` is not called) when there is no entry.
    ///
    /// The buffer points into the memory map and is valid only while `body` runs: it must not
    /// escape. `body` runs between LMDB calls, never inside a fault-guarded one (CLMDBGuard), so
    /// the guard's recovery point is not set while Swift code of `body` runs and no Swift frame
    /// can be jumped over. The bytes it sees were all read once already, by the checksum.
    /// `hash` is `cacheKey`'s `KeyHash`, as the read computed it.
    /// - Throws: `checksumMismatch` when the bytes are corrupt (`body` is not called);
    ///   `corruptStore` for an entry without bytes or a damaged tree; what `body` throws.
    func withBlob<R>(cacheKey: String, hash: KeyHash,
                     _ body: (EntryRecord, UnsafeRawBufferPointer) throws(ImageStoreError) -> R) throws(ImageStoreError) -> R? {
        try reading("reading an entry") { txn in
            var result: R?
            try locateBlob(cacheKey, hash: hash, in: txn) { record, blob in
                try verify(record, blob: blob, checksum: Checksum.blob(blob))
                result = try body(record, blob)
            }
            return result
        }
    }

    /// The entry stored for `cacheKey` with a copy of its bytes, verified against the record's
    /// checksum, or nil; the copy and the checksum are one pass over the mapped bytes
    /// (`Checksum.copyingBlob`).
    /// - Parameters:
    ///   - hash: `cacheKey`'s `KeyHash`, as the read computed it.
    ///   - keptUpTo: the largest blob the caller may keep (the memory tier's entry limit; 0 when
    ///     it keeps none). A copy within it is written with streaming stores (`copyingBlob`'s
    ///     `streaming`).
    /// - Throws: `checksumMismatch` when the bytes are corrupt (they are not returned);
    ///   `corruptStore` for an entry without bytes or a damaged tree.
    func entry(cacheKey: String, hash: KeyHash, keptUpTo: Int) throws(ImageStoreError) -> DecodedEntry? {
        // The result goes out through `found`, a class reference (nil on a miss), not as the
        // read's (generic, unspecialised across modules) result or as an optional tuple: copying
        // a large optional through value witnesses (memmove) took about 10% of a miss.
        var found: DecodedEntry?
        try reading("reading an entry") { txn in
            try locateBlob(cacheKey, hash: hash, in: txn) { record, blob in
                let (copy, checksum) = Checksum.copyingBlob(blob, streaming: blob.count <= keptUpTo)
                try verify(record, blob: blob, checksum: checksum)
                found = DecodedEntry(record: record, data: copy, transaction: UInt64(txn.id))
            }
        }
        return found
    }

    /// Calls `body` with the record for `cacheKey` and its bytes as mapped, unverified, inside
    /// `txn`; does nothing when there is no entry.
    private func locateBlob(_ cacheKey: String, hash: KeyHash, in txn: borrowing Transaction,
                            _ body: (EntryRecord, UnsafeRawBufferPointer) throws -> Void) throws {
        _ = try locate(cacheKey, hash: hash, in: txn) { key, record in
            guard let blob = try txn.get(blobs, key: key) else {
                throw ImageStoreError.corruptStore(path: path, detail: "the entry for \(record.url) has no image bytes")
            }
            try body(record, blob)
        }
    }

    /// Throws `checksumMismatch` unless `blob` has the record's size and `checksum` is the record's.
    private func verify(_ record: EntryRecord, blob: UnsafeRawBufferPointer, checksum: UInt64) throws(ImageStoreError) {
        guard blob.count == record.byteCount, checksum == record.checksum else {
            throw ImageStoreError.checksumMismatch(url: record.url, expected: record.checksum, actual: checksum)
        }
    }
}
