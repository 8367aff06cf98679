import Foundation

/// One entry as a read finds it: its record, its bytes, and the `EntryInfo` a read returns,
/// built once. Immutable.
///
/// A class: the durable tier hands one to the read path, which keeps the same object in the
/// memory tier, and a memory hit copies one reference out of the cache's lock (one retain),
/// not a record whose strings and `Data` would each be retained, on objects every reading
/// thread shares. A missing entry is a nil reference, so a miss moves no large optional
/// through the read path (the profile showed those copies as memmove).
///
/// An `ImageContents` whose `info` is `ImageStore.info(record)`, made once: a hit on a
/// fixed-expiry entry returns this object as the `StoredImage`'s contents.
final class DecodedEntry: ImageContents, @unchecked Sendable {
    let record: EntryRecord
    /// The ID of the LMDB snapshot it was read from (`mdb_txn_id` of the read transaction).
    let transaction: UInt64

    init(record: EntryRecord, data: Data, transaction: UInt64) {
        self.record = record
        self.transaction = transaction
        super.init(data: data, info: ImageStore.info(record))
    }
}
