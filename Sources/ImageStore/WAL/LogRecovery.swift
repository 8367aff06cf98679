import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What recovery found in the log when the store opened.
public struct RecoveryReport: Sendable, Hashable {
    /// Log segments read.
    public var segmentsRead = 0
    /// Records applied to LMDB that it did not hold yet.
    public var recordsReplayed = 0
    /// Records skipped because LMDB already held them.
    public var recordsAlreadyApplied = 0
    /// Bytes of a torn record at the tail of the log that were dropped (the normal crash case).
    public var tornBytesDropped = 0
    /// Damage skipped in salvage mode, one sentence each (segment, offset, what was lost).
    public var salvaged: [String] = []
    /// Records at or below LMDB's applied-seq that the log should still hold but does not: the
    /// log ends before applied-seq (a segment cut short or deleted), a gap between segments, or
    /// damaged applied records that were skipped. LMDB holds them, so they lost nothing
    /// themselves; non-zero means the log was cut, deleted in part or damaged (or a power cut
    /// dropped unsynced records LMDB had already applied). See `warnings`.
    public var appliedRecordsMissing = 0
    /// Bytes of damaged records at or below applied-seq that were skipped without salvage: no
    /// unapplied write was at risk, so the open goes on.
    public var appliedBytesSkipped = 0
    /// One sentence for each thing above that a user should hear about (where, which sequence
    /// numbers), as `imgstore-admin` prints them.
    public var warnings: [String] = []
    /// LMDB transactions the replay committed: it batches with the applier's caps
    /// (`LogApplier.maxBatchRecords`, `maxBatchBytes`), never a whole segment at once.
    public var replayTransactions = 0
    /// Valid records dropped with a torn tail: they followed a hole after the synced watermark,
    /// so they were never synced (their puts were not acknowledged as `.sync`) and replaying
    /// them past the hole would not give a state the store was ever in.
    public var tornRecordsDropped = 0
    /// The log's synced watermark as recovery read it: every record up to it had been synced.
    /// Nil for a log written by format version 1 (no watermark file).
    public var syncedWatermark: UInt64?

    public init() {}
}

/// Reads the log's segments and replays them, following the recovery rules in `WALFormat.swift`.
struct LogRecovery {
    let directory: String
    let fileSystem: any LogFileSystem
    let salvage: Bool

    /// The segment numbers present in the directory, in order.
    /// - Throws: `storage` when the directory cannot be listed (never an empty list instead).
    static func segments(in directory: String, fileSystem: any LogFileSystem) throws(ImageStoreError) -> [UInt64] {
        do {
            return try fileSystem.contentsOfDirectory(directory).compactMap(WALFormat.segmentNumber(fromName:)).sorted()
        } catch {
            throw .storage(path: directory, detail: "listing the log: \(error)")
        }
    }

    /// Replays every segment: `apply` receives the valid records in order, segment by segment,
    /// those with sequence numbers ≤ `appliedSequence` left out.
    ///
    /// A put's image is a slice of the buffer its segment was read into, not a copy (copying
    /// the log's 256 MiB out of it was a third of the pages a replay touched for the first
    /// time). An `apply` that returns before it is done with a batch (the `ReplayPipeline`)
    /// passes `awaitApplied`, which waits until the first `n` batches it was given are done
    /// and released: segments then alternate between two buffers, and a buffer is read into
    /// again only after the batches cut from it are gone. Without it, one buffer serves.
    /// (Were a slice still alive, the read would copy the buffer first, as `Data` does.)
    ///
    /// With `awaitApplied`, the first segment's head (`headBytes`) is read first, on its own,
    /// and the records it holds whole are given to `apply` before the segment is read whole
    /// (`replayHead`); their images are slices of the head. Those records may then be applied
    /// before damage later in that segment refuses the open (`walCorrupt`), as an earlier
    /// segment's are before damage in a later one: LMDB holds a prefix of the log either way,
    /// and the next open (or the salvage) goes on after it.
    /// - Returns: the report and the last valid sequence number (0 for an empty log).
    /// - Throws: `walCorrupt` for damage followed by valid records (unless salvaging);
    ///   `storage` for I/O errors; what `apply` throws.
    func replay(appliedSequence: UInt64, apply: ([SequencedEntry]) throws(ImageStoreError) -> Void,
                awaitApplied: ((_ batches: Int) -> Void)? = nil)
        throws(ImageStoreError) -> (report: RecoveryReport, lastSequence: UInt64)
    {
        var report = RecoveryReport()
        // Read before the segments: a live writer only raises it after its records are in them.
        let watermark = try SyncedWatermark.read(in: directory)
        report.syncedWatermark = watermark?.syncedThrough
        if let watermark, watermark.generation == 0 {
            report.warnings.append("the log's synced watermark (\(SyncedWatermark.fileName)) holds no valid slot: damage after the last sync cannot be told from a torn tail")
        }
        /// Set when a listed segment vanished while reading: a live writer retired it.
        var retiredMeanwhile = false
        var expected: UInt64?
        var lastSequence: UInt64 = 0
        /// Set once salvage skipped damage: the sequence then continues from what follows it.
        var afterSkip = false
        /// Damage seen so far that was not (yet) followed by valid data: a torn tail unless a
        /// later record turns up.
        var unresolvedDamage: (segment: UInt64, offset: Int, bytes: Int)?

        var buffers = [Data](repeating: Data(), count: awaitApplied == nil ? 1 : 2)
        /// For each buffer, how many batches `apply` had been given when its last segment's were.
        var batchesThroughBuffer = [Int](repeating: 0, count: buffers.count)
        var batchesGiven = 0
        /// Gives `batch` to `apply` in transactions of the applier's caps, so replay cannot hit
        /// MDB_TXN_FULL or storeFull where normal operation would not.
        func give(_ batch: [SequencedEntry]) throws(ImageStoreError) {
            report.recordsReplayed += batch.count
            var rest = batch[...]
            while !rest.isEmpty {
                let count = LogApplier.batchLength(rest)
                try apply(Array(rest.prefix(count)))
                batchesGiven += 1
                report.replayTransactions += 1
                rest = rest.dropFirst(count)
            }
        }
        for (index, number) in try Self.segments(in: directory, fileSystem: fileSystem).enumerated() {
            let path = directory + "/" + WALFormat.segmentName(number)
            let slot = index % buffers.count
            awaitApplied?(batchesThroughBuffer[slot])
            let file: any LogFile
            do throws(LogIOError) {
                guard FileManager.default.fileExists(atPath: path) else {  // retired meanwhile by a live writer
                    retiredMeanwhile = true
                    continue
                }
                file = try fileSystem.open(path, preallocate: 0)
            } catch where error.code == ENOENT {
                retiredMeanwhile = true  // retired between the check and the open (verify's reads only)
                continue
            } catch {
                throw .storage(path: directory, detail: "reading the log: \(error)")
            }
            defer { file.close() }
            /// Where parsing the segment's bytes starts: after the records its head gave.
            var offset = 0
            var head: Data?
            if index == 0 && awaitApplied != nil {
                // The writer queue starts on the first records while the rest is read.
                let bytes = try reading { () throws(LogIOError) in try file.readPrefix(Self.headBytes) }
                let replayed = replayHead(bytes, segment: number, appliedSequence: appliedSequence,
                                          expected: &expected, lastSequence: &lastSequence, report: &report)
                offset = replayed.end
                try give(replayed.batch)
                head = bytes
            }
            let segment: Data
            let count: Int
            if let head, head.count < Self.headBytes {
                (segment, count) = (head, head.count)  // the head is the whole file: no second read
            } else {
                count = try reading { () throws(LogIOError) in try file.readAll(into: &buffers[slot]) }
                segment = buffers[slot]
            }
            report.segmentsRead += 1
            var batch: [SequencedEntry] = []
            try ImageStoreError.rethrowing(path: directory, operation: "reading the log") { try segment.withUnsafeBytes { whole in
                let all = UnsafeRawBufferPointer(rebasing: whole.prefix(count))
                while offset < all.count {
                    if let record = parse(all, at: offset, segment: number, sharing: segment) {
                        // Sequence numbers continue from what LMDB holds and never skip, except
                        // below applied-seq: a gap there lost nothing (LMDB holds it all), as
                        // when a failed checkpoint left an older segment behind.
                        let wanted = expected ?? (appliedSequence + 1)
                        let gapIsApplied = record.sequence <= appliedSequence + 1
                        let next = (segment: number, offset: offset, sequence: record.sequence)
                        if record.sequence != wanted && !gapIsApplied && !(expected == nil && afterSkip) {
                            let damage = unresolvedDamage ?? (number, offset, 0)
                            try resolve(damage, nextValid: next, expected: expected, appliedSequence: appliedSequence, report: &report,
                                        detail: "sequence numbers \(wanted) to \(record.sequence - 1) are missing")
                            unresolvedDamage = nil
                        } else if let damage = unresolvedDamage, damage.segment != number, record.sequence == expected {
                            // An earlier segment's tail that the next segment continues: it held
                            // no record (the writer rolls only after its last one), so it is
                            // stale bytes of a recycled file, shorter than a header. Lost nothing.
                            unresolvedDamage = nil
                        } else if let damage = unresolvedDamage {
                            try resolve(damage, nextValid: next, expected: expected, appliedSequence: appliedSequence, report: &report)
                            unresolvedDamage = nil
                        } else if let expected, record.sequence > expected {
                            // A gap that lost nothing (all at or below applied-seq): still counted.
                            report.appliedRecordsMissing += Int(record.sequence - expected)
                            report.warnings.append("sequence numbers \(expected) to \(record.sequence - 1) are missing before \(WALFormat.segmentName(number)) at byte \(offset); LMDB holds them")
                        }
                        Self.take(record, appliedSequence: appliedSequence, batch: &batch, expected: &expected,
                                  lastSequence: &lastSequence, report: &report)
                        afterSkip = false
                        offset = record.end
                        continue
                    }
                    // The valid log ends here, for now. Find the next valid record, if any.
                    let torn = tornLength(all, at: offset, segment: number, expected: expected)
                    guard let next = nextValidOffset(all, after: offset, segment: number) else {
                        if torn > 0 { unresolvedDamage = (number, offset, torn) }
                        break
                    }
                    let nextSequence = parse(all, at: next, segment: number)!.sequence
                    // The first record LMDB lacks that the damage held: after the watermark, it
                    // was never synced, and the hole is a torn tail (the rest of the segment goes).
                    let firstMissing = max(appliedSequence + 1, expected ?? (appliedSequence + 1))
                    if let watermark, nextSequence > appliedSequence + 1, firstMissing > watermark.syncedThrough {
                        let dropped = validRecords(all, from: next, segment: number)
                        report.tornRecordsDropped += dropped.count
                        unresolvedDamage = (number, offset, max(torn, dropped.end - offset))
                        break
                    }
                    try resolve((number, offset, next - offset), nextValid: (number, next, nextSequence),
                                expected: expected, appliedSequence: appliedSequence, report: &report)
                    unresolvedDamage = nil
                    offset = next
                    expected = nil  // salvage continues at whatever sequence comes next
                    afterSkip = true
                }
            } }
            try give(batch)
            batchesThroughBuffer[slot] = batchesGiven
        }
        if let damage = unresolvedDamage { report.tornBytesDropped += damage.bytes }
        if let synced = watermark?.syncedThrough, !retiredMeanwhile, synced > max(lastSequence, appliedSequence) {
            // Records the log had synced (acknowledged, for `.sync` puts) and LMDB lacks are not
            // in it: a segment was cut short, at a record boundary or not, or deleted.
            let first = max(lastSequence, appliedSequence) + 1
            let detail = "the log ends at sequence \(lastSequence), but it had been synced through sequence \(synced) (\(SyncedWatermark.fileName)): sequence numbers \(first) to \(synced) are missing, acknowledged writes LMDB lacks (a segment was cut short or deleted)"
            guard salvage else { throw .walCorrupt(path: directory, detail: detail) }
            report.salvaged.append(detail)
        }
        if lastSequence > 0 && lastSequence < appliedSequence {
            // The segment holding applied-seq was cut short, or it and any later ones deleted.
            // Not refused: under `.none`/`.batched` a power cut leaves the same state (LMDB
            // applies records before the log syncs them), and nothing LMDB lacks can be named.
            report.appliedRecordsMissing += Int(appliedSequence - lastSequence)
            report.warnings.append("the log ends at sequence \(lastSequence), before LMDB's applied-seq \(appliedSequence): a segment was cut short or deleted (or a power cut dropped unsynced records); records after \(appliedSequence) that were in it cannot be counted")
        }
        return (report, lastSequence)
    }

    /// Damage at `damage` is followed by valid data at `nextValid`: skip it when it held only
    /// records LMDB already holds (reported, no unapplied write was at risk); otherwise refuse,
    /// or skip and report when salvaging.
    private func resolve(_ damage: (segment: UInt64, offset: Int, bytes: Int),
                         nextValid: (segment: UInt64, offset: Int, sequence: UInt64), expected: UInt64?,
                         appliedSequence: UInt64, report: inout RecoveryReport,
                         detail: String? = nil) throws(ImageStoreError) {
        let place = "\(WALFormat.segmentName(damage.segment)) at byte \(damage.offset)"
        let what = detail ?? "a damaged record (\(damage.bytes) bytes)"
        // Records are contiguous, so the damage held sequence numbers below the next valid one.
        if nextValid.sequence <= appliedSequence + 1 {
            report.appliedBytesSkipped += damage.bytes
            // Without a record before the damage its count is unknown; it held one at least.
            report.appliedRecordsMissing += expected.map { Int(nextValid.sequence - min($0, nextValid.sequence)) } ?? 1
            report.warnings.append("skipped \(what) in \(place), holding only records LMDB already holds (up to sequence \(nextValid.sequence - 1))")
            return
        }
        guard salvage else {
            throw .walCorrupt(path: directory, detail: "\(what) in \(place), followed by valid records in \(WALFormat.segmentName(nextValid.segment)) at byte \(nextValid.offset)")
        }
        report.salvaged.append("skipped \(what) in \(place)")
    }

    /// The records (conditions 1–5) from `offset` to the end of the segment, skipping damage:
    /// how many, and where the last one ends.
    private func validRecords(_ bytes: UnsafeRawBufferPointer, from offset: Int, segment: UInt64) -> (count: Int, end: Int) {
        var count = 0
        var end = offset
        var position: Int? = offset
        while let at = position {
            guard let record = parse(bytes, at: at, segment: segment) else {
                position = nextValidOffset(bytes, after: at, segment: segment)
                continue
            }
            count += 1
            end = record.end
            position = record.end < bytes.count ? record.end : nil
        }
        return (count, end)
    }

    /// Bytes of the first segment that a pipelined replay reads, parses and gives to `apply`
    /// before it reads the whole segment: the writer queue then applies them while the rest is
    /// read, instead of waiting idle for a whole segment's read (62 ms of a 542 ms recovery of
    /// 256 MiB, `strace` of `imgstore-bench --cases recover.256MiB`).
    static let headBytes = 8 << 20

    /// The records at the start of `head` (the first segment's first bytes) that continue the
    /// log cleanly: each valid, whole inside `head`, and the one expected next (before any, one
    /// at or below applied-seq + 1, as `replay` takes a log's first record without a word). It
    /// stops at the first that is not, and `replay`'s pass over the whole segment goes on from
    /// there with all of its rules: a record cut by the end of `head` was only cut by the read,
    /// and anything else (damage, a gap) is for those rules to judge.
    /// - Returns: the records LMDB lacks, and the offset after the last record taken.
    private func replayHead(_ head: Data, segment: UInt64, appliedSequence: UInt64, expected: inout UInt64?,
                            lastSequence: inout UInt64, report: inout RecoveryReport) -> (batch: [SequencedEntry], end: Int) {
        var batch: [SequencedEntry] = []
        var end = 0
        head.withUnsafeBytes { bytes in
            while let record = parse(bytes, at: end, segment: segment, sharing: head),
                  record.sequence == expected ?? min(record.sequence, appliedSequence + 1) {
                Self.take(record, appliedSequence: appliedSequence, batch: &batch, expected: &expected,
                          lastSequence: &lastSequence, report: &report)
                end = record.end
            }
        }
        return (batch, end)
    }

    /// Takes a valid record the log goes on with: into `batch` when LMDB lacks it, else counted
    /// as applied; the record after it is the one expected next.
    private static func take(_ record: (sequence: UInt64, entry: LogEntry, end: Int), appliedSequence: UInt64,
                             batch: inout [SequencedEntry], expected: inout UInt64?, lastSequence: inout UInt64,
                             report: inout RecoveryReport) {
        if record.sequence > appliedSequence {
            batch.append(SequencedEntry(sequence: record.sequence, entry: record.entry))
        } else {
            report.recordsAlreadyApplied += 1
        }
        lastSequence = max(lastSequence, record.sequence)
        expected = record.sequence + 1
    }

    /// Runs a read of the log, reporting its failure as `storage`.
    private func reading<T>(_ body: () throws(LogIOError) -> T) throws(ImageStoreError) -> T {
        do { return try body() } catch { throw .storage(path: directory, detail: "reading the log: \(error)") }
    }

    /// A record that meets validity conditions 1–6 (6 without the sequence check). With
    /// `storage`, whose first bytes `bytes` are, a put's image is a slice of it; else a copy.
    private func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int, segment: UInt64, sharing storage: Data? = nil)
        -> (sequence: UInt64, entry: LogEntry, end: Int)?
    {
        guard offset + WALFormat.headerByteCount <= bytes.count,
              let header = WALFormat.Header(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 32)]), segment: segment),
              offset + 32 + header.length <= bytes.count
        else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + 32)..<(offset + 32 + header.length)])
        let checksum = WALFormat.checksum(headerTail: UnsafeRawBufferPointer(rebasing: bytes[(offset + 8)..<(offset + 32)]), payload: payload)
        guard checksum == header.checksum, header.sequence >= 1,
              let entry = LogEntry(type: header.type, payload: payload, sharedImage: storage.map { storage in
                  { range in storage[(storage.startIndex + offset + 32 + range.lowerBound)..<(storage.startIndex + offset + 32 + range.upperBound)] }
              })
        else { return nil }
        return (header.sequence, entry, offset + 32 + header.length)
    }

    /// How many bytes at `offset` belong to a record of this segment that was cut short or
    /// damaged. A complete header counts when it names this segment or carries the sequence
    /// number expected next (so damage to either field is still seen): anything else there is
    /// zeros or a recycled file's stale bytes, which end the log without loss. A header cut off
    /// by the end of the file counts its non-zero bytes.
    private func tornLength(_ bytes: UnsafeRawBufferPointer, at offset: Int, segment: UInt64, expected: UInt64?) -> Int {
        let available = bytes.count - offset
        guard available > 0 else { return 0 }
        guard available >= WALFormat.headerByteCount else {
            return bytes[offset...].allSatisfy({ $0 == 0 }) ? 0 : available
        }
        let namesSegment = bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self) == segment.littleEndian
        let continuesSequence = expected.map { bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self) == $0.littleEndian } ?? false
        guard namesSegment || continuesSequence else { return 0 }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)))
        return min(available, WALFormat.headerByteCount + min(length, WALFormat.maxPayloadBytes))
    }

    /// The offset of the next record after `offset` that meets conditions 1–5, if any. Only
    /// offsets whose segment field holds this segment's number are fully checked, and those are
    /// found by `memchr` on one non-zero byte of the number, so zeroed or stale space is
    /// skipped at memory speed.
    private func nextValidOffset(_ bytes: UnsafeRawBufferPointer, after offset: Int, segment: UInt64) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let pattern = withUnsafeBytes(of: segment.littleEndian) { Array($0) }
        let anchor = pattern.firstIndex { $0 != 0 } ?? 0
        var position = offset + 1 + 16 + anchor
        while position < bytes.count {
            guard let hit = memchr(base + position, Int32(pattern[anchor]), bytes.count - position) else { return nil }
            let hitOffset = base.distance(to: UnsafeRawPointer(hit))
            let candidate = hitOffset - 16 - anchor
            if candidate + 32 <= bytes.count,
               bytes.loadUnaligned(fromByteOffset: candidate + 16, as: UInt64.self) == segment.littleEndian,
               parse(bytes, at: candidate, segment: segment) != nil {
                return candidate
            }
            position = hitOffset + 1
        }
        return nil
    }
}
