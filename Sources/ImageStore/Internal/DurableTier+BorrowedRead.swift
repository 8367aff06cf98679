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
            guard let (key, record) = try locate(cacheKey, in: txn) else { return nil }
            guard let blob = try txn.get(blobs, key: key) else {
                throw ImageStoreError.corruptStore(path: path, detail: "the entry for \(record.url) has no image bytes")
            }
            let actual = Checksum.blob(blob)
            guard blob.count == record.byteCount, actual == record.checksum else {
                throw ImageStoreError.checksumMismatch(url: record.url, expected: record.checksum, actual: actual)
            }
            return try body(record, blob)
        }
    }
}
