// # imgstore write-ahead log format, version 3
//
// Puts and deletes are appended to the log, group-committed (one write and one fdatasync
// for many writers), then applied to LMDB in batches by the single writer. The log is a
// sequence of numbered segment files in the store directory:
//
//   wal-00000000000000000001.log, wal-00000000000000000002.log, …   (20 decimal digits)
//
// A segment is preallocated (or recycled from a checkpointed one) and overwritten from the
// start, so its tail may hold zeros or stale records of an older segment: both read as the end
// of the log (validity condition 3 below), never as data.
//
// Versions: 1 (segments and records of types 1–3); 2 adds the synced watermark file,
// `wal-synced`; 3 adds the renew record (type 4), which carries an entry's new record without
// its bytes (a `304 Not Modified`). A log without `wal-synced` was written by version 1 and is
// read with the version-1 rules (no watermark: rules W1–W3 below do not apply); the first open
// as writer creates it. A version-2 or version-1 log holds no renew record and is read as it
// was; the first open as writer rewrites the watermark as version 3 (synced) before the log
// takes a record, so a version-2 build refuses the log (`newerFormat`) rather than reading a
// renew record as damage.
//
// ## Synced watermark (`wal-synced`, `SyncedWatermark.swift`), 64 bytes: two 32-byte slots
//
// | offset | size | field                                                  |
// |--------|------|--------------------------------------------------------|
// | 0      | 8    | checksum: XXH3-64 of bytes 8..<32 of the slot          |
// | 8      | 4    | magic `IWAL` (ASCII)                                   |
// | 12     | 4    | log format version, 3 (2 is read; a newer one refuses the open: `newerFormat`) |
// | 16     | 8    | generation, +1 per write; slot `generation % 2` is written |
// | 24     | 8    | synced-through: every record with a sequence ≤ it had been synced |
//
// The slot with the highest generation among those whose checksum and magic hold is the
// watermark. The leader writes the next slot right after each segment `fdatasync` returns and
// does not sync it: its claim was durable before it was written, so whichever version reaches
// the disk is true (an older one after a power cut is only weaker). It sits beside the
// segments, not in one, so it outlives a segment cut short or deleted. Two slots, so a torn
// write of one leaves the other. Opening as writer rewrites and syncs it (with the directory,
// when new) when it is missing, holds no valid slot, or claims more than LMDB's applied-seq
// after recovery (a salvaged log whose synced records were lost): new records reuse those
// sequence numbers.
//
// ## Record (all integers little-endian)
//
// | offset | size | field                                                                   |
// |--------|------|-------------------------------------------------------------------------|
// | 0      | 8    | checksum: XXH3-64 of the payload, seeded with XXH3-64 of bytes 8..<32   |
// | 8      | 4    | payload length L                                                        |
// | 12     | 1    | type: 0 reserved (zeroed space), 1 put, 2 delete, 3 delete-all, 4 renew |
// | 13     | 3    | reserved, 0                                                             |
// | 16     | 8    | segment number of the file the record is in                             |
// | 24     | 8    | sequence number: contiguous across all segments, first record is ≥ 1    |
// | 32     | L    | payload                                                                 |
//
// XXH3 (Debian's libxxhash) rather than CRC32C: it is there, faster, and its 64 bits make an
// accidental match of stale bytes negligible. Seeding with the header's hash covers header and
// payload without copying them together.
//
// Records are not split into fixed blocks as in LevelDB: the writer hands the caller's image
// bytes to `writev` without copying them, and the reader reads a payload into one buffer, so a
// large image is never held in memory twice. A payload is at most `maxPayloadBytes` (1 GiB), a
// constant of the format: the writer refuses larger payloads at append (`entryTooLarge`), so
// whatever configuration a later opener has, it reads every record that was written.
//
// Payloads:
// - put (1): UInt32 R, then R bytes of entry record (`StoreFormat.swift`), then the image bytes
//   (exactly the record's byte count).
// - delete (2): the cache key, UTF-8.
// - delete-all (3): empty.
// - renew (4, version 3): the entry record alone (`StoreFormat.swift`), no image bytes. Applied
//   only when LMDB's entry for its cache key has the record's checksum and byte count (the
//   bytes it renews): its record and index rows are replaced, the blob is not touched.
//   Otherwise the entry was replaced or removed after the renewal was prepared, and a later
//   record (or an earlier one LMDB already applied) says what it is: the renew does nothing.
//
// ## A record is valid when
// 1. its 32 header bytes lie within the file;
// 2. its type is 1, 2, 3 or 4 and the reserved bytes are 0;
// 3. its segment number is the file's own (stale bytes of a recycled file fail here);
// 4. L ≤ `maxPayloadBytes` and the payload lies within the file;
// 5. the checksum matches;
// 6. its sequence number is one more than the previous valid record's (across segments), and
//    its payload decodes (a put's record and byte count agree). Below `applied-seq` the
//    sequence may jump: records LMDB already holds need no contiguity (a checkpoint that failed
//    part way can leave an older segment behind while later ones were retired).
//
// ## Recovery rules (on open, before the store serves anything)
// 1. Read segments in increasing number, records in order, while they are valid.
// 2. The first invalid record ends the valid log. If any valid record (conditions 1–5) exists
//    after it — later in that segment or in a later segment — data in the middle is damaged:
//    opening fails with `walCorrupt` naming the segment and offset, unless the configuration
//    asks to salvage, which skips to the next valid record and reports what was skipped.
// 3. Otherwise the damage is a torn tail (the normal crash case): it is dropped and the number
//    of bytes dropped is reported in `ImageStore.recoveryReport`.
// 4. Records whose sequence number is ≤ the `applied-seq` recorded in LMDB are already applied
//    and skipped; the rest are applied in order (replay is idempotent), in transactions capped
//    like the applier's (`LogApplier.batchLength`). A gap whose missing numbers are all
//    ≤ `applied-seq` is not damage, nor is damage followed by a valid record whose sequence is
//    ≤ `applied-seq` + 1 (records are contiguous, so the damage held only applied records): both
//    are skipped without salvage, counted in `appliedRecordsMissing` / `appliedBytesSkipped`
//    and named in `warnings`. Rule 2 refuses only loss of records LMDB lacks.
// 4a. A log whose last valid record is below `applied-seq` was cut short or lost its newest
//    segment(s): counted and warned about, not refused, because a power cut under `.none` or
//    `.batched` leaves the same state (the applier applies records before the log syncs them).
//
// With a synced watermark W (version 2 and later), before rules 2 and 3:
// W1. Damage whose first record LMDB lacks, max(applied-seq + 1, the sequence expected there),
//    is above W, in a segment no later segment with valid records follows, is a torn tail: the
//    rest of that segment is dropped, valid records after the hole included (they were never
//    synced, so no `.sync` put among them was acknowledged, and replaying past the hole would
//    give a state the store was never in). Reported: `tornBytesDropped`, `tornRecordsDropped`.
// W2. Damage at or below W is media damage: rule 2 (`walCorrupt`, or salvage). A segment with
//    valid records after the damaged one also makes it media damage, whatever W says: the
//    writer syncs a segment whole before it writes the next.
// W3. A log whose last valid record L is below W, with W > applied-seq, lost records it had
//    synced and LMDB lacks (max(L, applied-seq) + 1 to W: a segment cut short, at a record
//    boundary or not, or deleted): `walCorrupt` naming them, or with salvage, opened and named
//    in `salvaged`. W ≤ applied-seq is rule 4a.
// How far W may lag, and what that costs. The file is never synced, so after a power cut (or a
// kill between a sync and the slot write) it holds whatever the kernel last wrote back: any
// number of syncs behind the last one S that completed (on ext4 and xfs, typically up to the
// writeback delay, ~30 s), never ahead of it (a slot is written only after its claim was
// durable). Every rule above only trusts records ≤ W, so a lower W claims less:
// - it never makes a hole media damage that would not be with W = S (W2 needs damage ≤ W, W3
//   needs L < W), so no false `walCorrupt`;
// - it never drops an intact record: a hole after S is the cut's own, and every record after
//   it was unsynced too (a later sync would have made the hole durable);
// - what it costs is detection in S's range (W, S]: media damage there reads as a torn tail
//   under W1 (dropped with what follows, and reported in `tornBytesDropped` and
//   `tornRecordsDropped`, never silently), and a segment cut short inside it is not noticed
//   by W3. Tests: `LogStaleWatermarkTests`.
// 5. Then a checkpoint: LMDB is synced (`mdb_env_sync(env, 1)`), the replayed segments are
//    recycled or deleted, the directory is fsynced, and a fresh segment continues the sequence.
//    With room on the disk every replayed segment is kept as a spare, and the writer queue
//    deletes those beyond `SegmentRecycler.maxSpares` after the open (`SegmentRecycler.trim`).
//
// ## Checkpoint (on a size policy, on close, and on demand)
// Apply everything written, `mdb_env_sync(env, 1)` (between checkpoints the writer commits
// without syncing, `MDB_NOSYNC`; the checkpoint then keeps LMDB's meta pages in
// `lmdb-checkpoint` and pins its snapshot, `LMDB/MetaPages.swift`, and an open after a crash
// goes back to them before replaying), then recycle or delete every segment whose
// records are all applied, and fsync the directory. A failed `mdb_env_sync` is never retried:
// the store stops taking writes (reads go on) and the next open recovers from the log. A failed
// retirement gives its segments back to the log, for the next checkpoint to retire.
//
// ## Batches
// One leader writes at most `WriteAheadLog.maxBatchRecords` records and `maxBatchBytes` bytes
// (a larger single record alone); this is the writer's policy, not part of the format.

import CXXHash
import Foundation

/// Constants and the header codec of the log format described above.
enum WALFormat {
    /// The log format version this build writes (the watermark file's slots carry it).
    static let version = SyncedWatermark.version
    static let headerByteCount = 32
    /// The largest payload a record may have (validity condition 4): a constant of the format,
    /// enforced when appending, so every opener reads every record the writer wrote whatever
    /// its configuration.
    static let maxPayloadBytes = 1 << 30

    enum RecordType: UInt8 {
        case put = 1
        case delete = 2
        case deleteAll = 3
        /// Version 3: a new record for an entry, its bytes unchanged (a 304's renewal).
        case renew = 4
    }

    /// The file name of segment `number`.
    static func segmentName(_ number: UInt64) -> String {
        let digits = String(number)
        return "wal-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".log"
    }

    /// The segment number in a file name, or nil when the name is not a segment's.
    static func segmentNumber(fromName name: String) -> UInt64? {
        guard name.hasPrefix("wal-"), name.hasSuffix(".log"), name.count == 28 else { return nil }
        return UInt64(name.dropFirst(4).dropLast(4))
    }

    /// A record's 32-byte header, checksum included.
    static func header(type: RecordType, segment: UInt64, sequence: UInt64, payload: [Data]) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: headerByteCount)
        let length = payload.reduce(0) { $0 + $1.count }
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 8, as: UInt32.self)
            bytes.storeBytes(of: type.rawValue, toByteOffset: 12, as: UInt8.self)
            bytes.storeBytes(of: segment.littleEndian, toByteOffset: 16, as: UInt64.self)
            bytes.storeBytes(of: sequence.littleEndian, toByteOffset: 24, as: UInt64.self)
            let seed = checksumSeed(headerTail: UnsafeRawBufferPointer(rebasing: bytes[8..<32]))
            let checksum: UInt64
            if payload.count == 1 {
                checksum = payload[0].withUnsafeBytes { Checksum.xxh3($0.baseAddress, $0.count, seed: seed) }
            } else {
                // One part at a time, each inside its own closure: parts never nest.
                let state = XXH3_createState()!
                defer { XXH3_freeState(state) }
                XXH3_64bits_reset_withSeed(state, seed)
                for part in payload { part.withUnsafeBytes { Checksum.update(state, $0.baseAddress, $0.count) } }
                checksum = XXH3_64bits_digest(state)
            }
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt64.self)
        }
        return header
    }

    /// XXH3-64 of `payload`, seeded with XXH3-64 of header bytes 8..<32 (what the reader checks).
    static func checksum(headerTail: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt64 {
        Checksum.xxh3(payload.baseAddress, payload.count, seed: checksumSeed(headerTail: headerTail))
    }

    private static func checksumSeed(headerTail: UnsafeRawBufferPointer) -> UInt64 {
        Checksum.xxh3(headerTail.baseAddress, headerTail.count)
    }

    /// The fields of a header, before its payload is checked.
    struct Header {
        var checksum: UInt64
        var length: Int
        var type: RecordType
        var segment: UInt64
        var sequence: UInt64

        /// Decodes 32 bytes, checking conditions 2 and 3 (type, reserved bytes, segment) and
        /// the length bound of condition 4. Nil when any fails.
        init?(_ bytes: UnsafeRawBufferPointer, segment expected: UInt64) {
            guard bytes.count >= 32 else { return nil }
            let reader = ByteReader(bytes: bytes)
            guard let type = RecordType(rawValue: bytes[12]), bytes[13] == 0, bytes[14] == 0, bytes[15] == 0,
                  reader.integer(at: 16, as: UInt64.self) == expected,
                  let length = reader.integer(at: 8, as: UInt32.self), Int(length) <= WALFormat.maxPayloadBytes
            else { return nil }
            self.checksum = reader.integer(at: 0, as: UInt64.self)!
            self.length = Int(length)
            self.type = type
            self.segment = expected
            self.sequence = reader.integer(at: 24, as: UInt64.self)!
        }
    }
}
