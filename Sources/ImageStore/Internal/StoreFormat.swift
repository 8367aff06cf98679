// # imgstore on-disk format, version 2
//
// A store is a directory:
//
//   data.mdb, lock.mdb   the LMDB environment (the durable tier)
//   wal-<n>.log          write-ahead log segments (`WAL/WALFormat.swift`)
//   wal-spare-*.log      checkpointed segments kept for reuse
//   wal-synced           the log's synced watermark (log format version 2 and later)
//   space.reserve        allocated room the writer gives back when the disk is full (`SpaceReserve.swift`)
//   writer.lock          flock'ed by the one process that writes; holds its pid
//   lmdb-checkpoint      data.mdb's meta pages as the last checkpoint left them (version 2;
//                        `CheckpointFile.swift`, and `LMDB/MetaPages.swift` for why)
//
// ## LMDB databases
//
// | name      | key                      | value                                   |
// |-----------|--------------------------|-----------------------------------------|
// | `meta`    | ASCII name               | store-wide records, below               |
// | `entries` | entry key (18 bytes)     | entry record (metadata only, below)     |
// | `blobs`   | entry key (18 bytes)     | the image bytes, exactly as put         |
// | `expiry`  | time key + entry key     | empty: one row per entry that expires   |
// | `access`  | time key + entry key     | empty: one row per entry                |
// | `quarantine` | time key + entry key  | what `verify --repair` set aside, below |
//
// A time key is 8 bytes: a time in ms since the epoch as Int64, sign bit flipped, big-endian,
// so LMDB's byte order is time order. `expiry` rows use the entry's expires-at, `access` rows
// its last access: a sweep reads `expiry` from the start up to now, and budget eviction reads
// `access` from the start (least recently used first), so neither ever scans the store.
// Invariant: every entry has exactly one `access` row, and one `expiry` row iff it expires,
// each matching its record; all are written in the entry's transaction.
//
// Metadata and bytes live in separate databases so listing, stats and verification of
// metadata never touch blob pages. An entry's record and blob are always written and
// deleted in the same transaction.
//
// ## Entry key
//
//   bytes 0..<16  XXH3-128 of the cache key (the normalised URL passed through the
//                 configured key function), big-endian high then low 64 bits
//   bytes 16..<18 collision slot, big-endian UInt16: 0 for the first key with this hash,
//                 the next free number for each further key that collides with it
//
// LMDB keys are limited to 511 bytes; hashing lets URLs be of any length. A lookup visits
// every slot of its hash (a cursor range over the 16-byte prefix) and compares the full
// cache key stored in the record, so a collision can never return another URL's image.
//
// ## Entry record (all integers little-endian)
//
// | offset | size | field                                                            |
// |--------|------|------------------------------------------------------------------|
// | 0      | 1    | record version (1)                                               |
// | 1      | 1    | flags: bit 0 expires, bit 1 has image facts                      |
// | 2      | 2    | reserved, 0                                                      |
// | 4      | 4    | U: byte length of the normalised URL                             |
// | 8      | 4    | K: byte length of the cache key when it differs from the URL, else 0 |
// | 12     | 2    | E: byte length of the HTTP `ETag` kept for revalidation, 0 if none |
// | 14     | 2    | M: byte length of the HTTP `Last-Modified` value, 0 if none      |
// | 16     | 8    | byte count of the blob                                           |
// | 24     | 8    | XXH3-64 of the blob (seed 0)                                     |
// | 32     | 8    | created-at, ms since the Unix epoch                              |
// | 40     | 8    | expires-at, ms since the Unix epoch (meaningful when bit 0 set)  |
// | 48     | 8    | last access, ms since the Unix epoch                             |
// | 56     | 1    | image format: 0 unknown, 1 PNG, 2 JPEG, 3 GIF, 4 WebP            |
// | 57     | 1    | bit depth / sample precision                                     |
// | 58     | 1    | components (channels)                                            |
// | 59     | 1    | PNG colour type, 0xFF when not PNG                               |
// | 60     | 4    | width                                                            |
// | 64     | 4    | height                                                           |
// | 68     | 4    | frame count, 0 when unknown                                      |
// | 72     | 1    | 1 when interlaced / progressive                                  |
// | 73     | 3    | reserved, 0                                                      |
// | 76     | 4    | sliding TTL in seconds: each read extends expires-at to read time plus this; 0 = fixed |
// | 80     | U    | the normalised URL, UTF-8                                        |
// | 80+U   | K    | the cache key, UTF-8 (absent when K = 0: the key is the URL)     |
// | 80+U+K | E    | the ETag, UTF-8                                                  |
// | …+E    | M    | the Last-Modified value, UTF-8                                   |
//
// A record is valid when its version is 1, its length is exactly 80 + U + K + E + M, and its
// byte count equals its blob's length. Readers reject anything else as corruption.
//
// A quarantine value: 1 byte problem kind (index in `VerifyProblem.Kind.allCases`), UInt32 LE
// length R of the entry record (0 when there was none), the R record bytes, then the image
// bytes as they were found (possibly none). The time key is when it was set aside.
//
// ## `meta` records
//
// | key             | value                                                          |
// |-----------------|----------------------------------------------------------------|
// | `format`        | the 8 bytes `IMGSTORE` then the format version, UInt32 LE      |
// | `logical-bytes` | UInt64 LE: the sum of all blobs' byte counts                   |
// | `applied-seq`   | UInt64 LE: the last write-ahead-log record applied (`WALFormat.swift`) |
//
// A directory is a store when its LMDB environment holds a `meta` database whose `format`
// record starts with `IMGSTORE`. A newer version than `StoreFormat.version` is refused.
// Version 2: the writer commits without syncing between checkpoints and keeps
// `lmdb-checkpoint`, which an open uses to go back to the last checkpoint after a crash.
// A writer of version 1 would commit without keeping that file's snapshot intact, so the
// first writable open of this build writes version 2 into a version 1 store (in its first
// transaction, synced), and builds of version 1 then refuse the store.
//
// ## Creation (`StoreCreation.swift`)
//
// One transaction creates every database and the format record; LMDB is then synced with its
// meta page and the directory fsynced, before the store is used. A data file that is empty,
// all zero bytes, or that no transaction ever committed to is a creation a crash cut off: it
// holds nothing, and opening creates the store in it (then replays the log, if any). A data
// file with imgstore's databases but no format record, or with log segments beside it, is a
// damaged store (`corruptStore`), never a foreign one.

/// Constants of the on-disk format described above.
enum StoreFormat {
    /// The version this build writes and the newest it reads.
    static let version: UInt32 = 2
    static let magic: [UInt8] = Array("IMGSTORE".utf8)

    static let metaDatabase = "meta"
    static let entriesDatabase = "entries"
    static let blobsDatabase = "blobs"
    static let expiryDatabase = "expiry"
    static let accessDatabase = "access"
    static let quarantineDatabase = "quarantine"
    /// Every database but `meta`, in the order they are opened.
    static let dataDatabases = [entriesDatabase, blobsDatabase, expiryDatabase, accessDatabase, quarantineDatabase]

    static let formatKey: [UInt8] = Array("format".utf8)
    static let logicalBytesKey: [UInt8] = Array("logical-bytes".utf8)
    static let appliedSequenceKey: [UInt8] = Array("applied-seq".utf8)

    static let hashByteCount = 16
    static let entryKeyByteCount = 18
    static let recordHeaderByteCount = 80
    static let recordVersion: UInt8 = 1

    /// The 8-byte time key of `milliseconds`, ordered as the times are.
    static func timeKey(_ milliseconds: Int64) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(bitPattern: milliseconds) ^ (1 << 63)).bigEndian) { Array($0) }
    }

    /// The time in an index row's key.
    static func time(ofIndexKey key: UnsafeRawBufferPointer) -> Int64 {
        Int64(bitPattern: UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)) ^ (1 << 63))
    }

    /// The format record's value for this build.
    static var formatRecord: [UInt8] {
        var bytes = magic
        withUnsafeBytes(of: version.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }
}
