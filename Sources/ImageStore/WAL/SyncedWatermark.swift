import CXXHash
import Foundation

/// The log's synced watermark: the file `wal-synced` (format in `WALFormat.swift`), which
/// says up to which sequence number the log was durable when it was last written.
///
/// The leader writes it right after each `fdatasync` of a segment returns, and never syncs it
/// for that: whenever its page reaches the disk, what it claims was already durable, so an old
/// value after a power cut only weakens what recovery can check, never makes it wrong. It lives
/// beside the segments rather than inside one, so it outlives a segment cut short or deleted,
/// which is what recovery must notice. Only the log's leader writes it (one writer at a time).
final class SyncedWatermark: Sendable {
    static let fileName = "wal-synced"
    static let slotByteCount = 32
    static let magic: UInt32 = 0x4C41_5749  // "IWAL" little-endian
    /// The log format version the watermark belongs to (`WALFormat.version`): 3 since renew
    /// records (type 4). A build of version 2 refuses a log whose slots say 3 (`newerFormat`)
    /// instead of reading its renew records as damage.
    static let version: UInt32 = 3

    /// What the file holds: the newest valid slot.
    struct Value: Sendable, Hashable {
        var generation: UInt64
        var syncedThrough: UInt64
        /// The log format version of the slot (2 or 3).
        var version: UInt32 = SyncedWatermark.version
    }

    private let file: any LogFile
    /// The generation of the last slot written; guarded by the log's leader role, kept in a
    /// lock so the type is `Sendable` without exceptions.
    private let generation: LockedValue<UInt64>

    private init(file: any LogFile, generation: UInt64) {
        self.file = file
        self.generation = LockedValue(generation)
    }

    static func path(in directory: String) -> String { directory + "/" + fileName }

    /// Reads the watermark of the log in `directory`: nil when there is no file (a log written
    /// by format version 1); a value of 0 when no slot is valid.
    /// - Throws: `newerFormat` for a slot of a newer log format; `storage` when it cannot be read.
    static func read(in directory: String) throws(ImageStoreError) -> Value? {
        let path = path(in: directory)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let bytes: [UInt8]
        do {
            // Read-only (verify reads it on read-only media too).
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .storage(path: directory, detail: "reading the log's synced watermark: \(error)")
        }
        var best = Value(generation: 0, syncedThrough: 0)
        for slot in 0..<2 {
            let start = slot * slotByteCount
            guard start + slotByteCount <= bytes.count else { break }
            let decoded: (version: UInt32, value: Value)? = bytes[start..<(start + slotByteCount)].withUnsafeBytes { decode($0) }
            guard let decoded else { continue }
            guard decoded.version <= version else {
                throw .newerFormat(path: directory, found: decoded.version, supported: version)
            }
            if decoded.value.generation >= best.generation {
                best = decoded.value
                best.version = decoded.version
            }
        }
        return best
    }

    /// Opens (creating when missing) the watermark file of `directory` for writing, after
    /// recovery. When it is missing or unreadable, or claims more than `appliedSequence` (what
    /// LMDB now holds: a salvaged log lost records it had synced), it is rewritten to claim
    /// `appliedSequence` and synced, with the directory, before the log writes anything: the
    /// new log's records reuse those sequence numbers. A watermark of an older format version
    /// is rewritten (and synced) the same way, so the file says version 3 before the log holds
    /// a record an older build cannot read.
    /// - Throws: `LogIOError` from the file system.
    static func open(in directory: String, fileSystem: any LogFileSystem, found: Value?,
                     appliedSequence: UInt64) throws(LogIOError) -> SyncedWatermark {
        let file = try fileSystem.open(path(in: directory), preallocate: 0)
        let watermark = SyncedWatermark(file: file, generation: found?.generation ?? 0)
        if found == nil || found!.generation == 0 || found!.syncedThrough > appliedSequence || found!.version < version {
            try watermark.record(appliedSequence)
            try file.sync()
            if found == nil { try fileSystem.syncDirectory(directory) }
        }
        return watermark
    }

    /// Records that every record up to `sequence` is durable. Called by the leader right after
    /// a sync returned; not synced itself (see the type's documentation).
    func record(_ sequence: UInt64) throws(LogIOError) {
        let next = generation.withLock { $0 += 1; return $0 }
        let slot = Self.encode(Value(generation: next, syncedThrough: sequence))
        try slot.withUnsafeBytes { bytes in
            Result { () throws(LogIOError) in try file.write([bytes], at: Int(next % 2) * Self.slotByteCount) }
        }.get()
    }

    func close() { file.close() }

    /// One 32-byte slot (layout in `WALFormat.swift`).
    static func encode(_ value: Value) -> [UInt8] {
        var writer = ByteWriter(capacity: slotByteCount)
        writer.append(UInt64(0))  // checksum, below
        writer.append(magic)
        writer.append(version)
        writer.append(value.generation)
        writer.append(value.syncedThrough)
        var bytes = writer.bytes
        let checksum = bytes[8...].withUnsafeBytes { Checksum.xxh3($0.baseAddress, $0.count) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        return bytes
    }

    /// A slot's version and value, or nil when its checksum or magic is wrong.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (version: UInt32, value: Value)? {
        let reader = ByteReader(bytes: bytes)
        guard bytes.count >= slotByteCount, reader.integer(at: 8, as: UInt32.self) == magic,
              reader.integer(at: 0, as: UInt64.self)
                == Checksum.xxh3(bytes.baseAddress! + 8, slotByteCount - 8)
        else { return nil }
        return (reader.integer(at: 12, as: UInt32.self)!,
                Value(generation: reader.integer(at: 16, as: UInt64.self)!, syncedThrough: reader.integer(at: 24, as: UInt64.self)!))
    }
}

import Locking
import Synchronization
