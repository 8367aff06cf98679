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
    /// - Throws: `checksumMismatch` when the bytes are corrupt (`body` is not called);
    ///   `corruptStore` for an entry without bytes or a damaged tree; what `body` throws.
    func withBlob<R>(cacheKey: String,
                     _ body: (EntryRecord, UnsafeRawBufferPointer) throws(ImageStoreError) -> R) throws(ImageStoreError) -> R? {
        try reading("reading an entry") { txn in
            guard let (record, blob) = try locateBlob(cacheKey, in: txn) else { return nil }
            try verify(record, blob: blob, checksum: Checksum.blob(blob))
            return try body(record, blob)
        }
    }

    /// The record and a copy of the bytes stored for `cacheKey`, verified against the record's
    /// checksum; the copy and the checksum are one pass over the mapped bytes
    /// (`Checksum.copyingBlob`).
    /// - Throws: `checksumMismatch` when the bytes are corrupt (they are not returned);
    ///   `corruptStore` for an entry without bytes or a damaged tree.
    func get(cacheKey: String) throws(ImageStoreError) -> (EntryRecord, Data)? {
        // The result goes out through `found`, not as the read's (generic, unspecialised across
        // modules) result: copying a large optional tuple through value witnesses (memmove)
        // took about 6% of a miss in the profile.
        var found: (EntryRecord, Data)?
        try reading("reading an entry") { txn in
            guard let (record, blob) = try locateBlob(cacheKey, in: txn) else { return }
            let (copy, checksum) = Checksum.copyingBlob(blob)
            try verify(record, blob: blob, checksum: checksum)
            found = (record, copy)
        }
        return found
    }

    /// The record for `cacheKey` and its bytes as mapped, or nil when there is no entry.
    private func locateBlob(_ cacheKey: String, in txn: borrowing Transaction) throws -> (EntryRecord, UnsafeRawBufferPointer)? {
        guard let (key, record) = try locate(cacheKey, in: txn) else { return nil }
        guard let blob = try txn.get(blobs, key: key) else {
            throw ImageStoreError.corruptStore(path: path, detail: "the entry for \(record.url) has no image bytes")
        }
        return (record, blob)
    }

    /// Throws `checksumMismatch` unless `blob` has the record's size and `checksum` is the record's.
    private func verify(_ record: EntryRecord, blob: UnsafeRawBufferPointer, checksum: UInt64) throws(ImageStoreError) {
        guard blob.count == record.byteCount, checksum == record.checksum else {
            throw ImageStoreError.checksumMismatch(url: record.url, expected: record.checksum, actual: checksum)
        }
    }
}
