import Foundation

/// Writing zeros ahead of the log, so that the `fdatasync` of a small batch writes its data and
/// nothing else.
///
/// A new segment is preallocated with `posix_fallocate`, which leaves its blocks *unwritten*
/// extents. On ext4 and XFS, the first write into such a block changes the extent map, so every
/// `fdatasync` that covers one also writes the file's metadata: on ext4 without a journal, one
/// more synchronous round trip to the device per sync (`ext4_write_inode` under
/// `__sync_dirty_buffer`). Blocks that were written before (a recycled segment, or zeros) need
/// no such change. PostgreSQL zero-fills new WAL segments for the same reason (`wal_init_zero`).
///
/// So while the log's syncs are small (their mean under `smallSyncBytes`), a thread of the
/// log's own (`imgstore.wal-zeroer`) keeps the `aheadBytes` after the write position written
/// with zeros, `chunkBytes` at a time. It waits for each chunk's writeback
/// (`LogFile.writeBack`, `sync_file_range`) but does not `fdatasync` it: the extent change is
/// then written once, by the log's next sync, instead of by every sync of the chunk. A zeroer
/// that synced each chunk itself put its device flushes between the log's, and 16 writers of
/// small images gained nothing. Large batches (the image
/// mix) pay the metadata write once per megabytes and would pay the zeros' bandwidth, so they
/// get none. Zeros read as the end of the log to recovery, exactly like preallocated space
/// (`WALFormat.swift`), so a crash at any point leaves nothing recovery reads differently.
///
/// The zeros make nothing durable and claim nothing: only the log's own syncs do.
///
/// Invariants, all under the log's lock:
/// - The zeroer writes only at or after `leaderWriteEnd` (the end of the batch the leader is
///   writing) and the segment's size, rounded up to a page: never over a record.
/// - A leader whose batch would reach a range being zeroed, or that rolls to the next segment,
///   waits until that range is done (`awaitZeroing`), and a roll forbids new ranges until it
///   ends (`leaderWriteEnd == .max`): the zeroer never writes to a file the log closed.
/// - A failed zero write or writeback fails the log: the writeback may have reported (and so
///   cleared) an error of the log's own pages.
extension WriteAheadLog {
    /// What the zeroer knows and does, guarded by the log's lock.
    struct ZeroAhead {
        /// The segment `writtenThrough` describes.
        var segment: UInt64 = 0
        /// Blocks of that segment before this offset are written (records, or zeros written back).
        var writtenThrough = 0
        /// The range being zeroed now.
        var inFlight: Range<Int>?
        /// The end of the leader's batch being written; `.max` during a roll; 0 when none.
        var leaderWriteEnd = 0
        /// Eight times the mean bytes of recent synced batches (each new one weighs 1/8); 0
        /// until the first sync, and nothing is zeroed before it.
        var syncedBytes8 = 0
        /// Whether the zeroer thread sleeps on `zeroerBell` (see `ringZeroer`).
        var zeroerAsleep = false
        /// Whether the zeroer runs at all (the file system writes real files).
        var enabled = false
    }

    /// Mean synced-batch bytes under which zeros are written ahead.
    static let smallSyncBytes = 256 << 10
    /// How far ahead of the write position the zeroer keeps blocks written.
    static let aheadBytes = 2 << 20
    /// Bytes per zero write and writeback.
    static let chunkBytes = 512 << 10
    private static let pageBytes = 4096

    /// Starts a fresh accounting for `segment`: a recycled file's blocks are written already.
    func resetZeroAhead(for segment: OpenSegment) {
        state.zeroAhead.segment = segment.number
        state.zeroAhead.writtenThrough = segment.recycled ? options.segmentBytes : 0
    }

    /// Called by the leader before it drops the lock to write `bytes` (rolling first when
    /// `rolls`): waits for a zero range it would reach, and publishes where its write ends.
    /// Called with the lock held.
    func awaitZeroing(writing bytes: Int, at offset: Int, rolls: Bool) {
        while let range = state.zeroAhead.inFlight, rolls || offset + bytes > range.lowerBound {
            condition.wait()
        }
        state.zeroAhead.leaderWriteEnd = rolls ? .max : offset + bytes
    }

    /// Called by the leader once its batch is written (and synced when `syncedBytes` is not
    /// nil): updates the mean and rings the zeroer when the blocks ahead run short. Called with
    /// the lock held.
    func leaderWrote(syncedBytes: Int?) {
        state.zeroAhead.leaderWriteEnd = 0
        if let syncedBytes {
            let mean8 = state.zeroAhead.syncedBytes8
            // The first sync sets the mean: a log that starts with large batches zeros nothing.
            state.zeroAhead.syncedBytes8 = mean8 == 0 ? 8 * max(syncedBytes, 1) : mean8 + syncedBytes - mean8 / 8
        }
        if nextZeroRange() != nil { ringZeroer() }
    }

    /// The next range to zero, or nil when there is none to zero now. Called with the lock held.
    private func nextZeroRange() -> Range<Int>? {
        let zero = state.zeroAhead
        guard zero.enabled, zero.inFlight == nil, zero.leaderWriteEnd != .max, !state.isClosed,
              state.failure == nil, let segment = state.segment, segment.number == zero.segment,
              zero.syncedBytes8 > 0, zero.syncedBytes8 < 8 * Self.smallSyncBytes else { return nil }
        let after = max(zero.writtenThrough, segment.size, zero.leaderWriteEnd)
        let start = (after + Self.pageBytes - 1) / Self.pageBytes * Self.pageBytes
        let end = segment.file.preallocatedBytes
        guard start < min(segment.size + Self.aheadBytes, end) else { return nil }
        return start..<min(start + Self.chunkBytes, end)
    }

    /// Wakes the zeroer thread if it sleeps. Called with the lock held.
    func ringZeroer() {
        guard state.zeroAhead.zeroerAsleep else { return }
        state.zeroAhead.zeroerAsleep = false
        zeroerBell.signal()
    }

    /// Stops the zeroer's work for good and waits for a range in flight. Called with the lock
    /// held, after `isClosed` is set (which stops new ranges).
    func stopZeroing() {
        state.zeroAhead.enabled = false
        while state.zeroAhead.inFlight != nil { condition.wait() }
        ringZeroer()
    }

    /// Starts the zeroer thread when the file system writes real files. It ends once the log is
    /// closed or dropped.
    func startZeroer() {
        guard options.fileSystem.writesZerosAhead else { return }
        state.zeroAhead.enabled = true
        let thread = Thread { [weak self] in
            // The strong reference lives one turn of the loop, as the leader thread's does.
            while let log = self {
                log.condition.lock()
                guard log.state.zeroAhead.enabled else {
                    log.condition.unlock()
                    return
                }
                if !log.zeroNextRange() {
                    log.state.zeroAhead.zeroerAsleep = true
                    log.condition.unlock()
                    _ = log.zeroerBell.wait(timeout: .now() + 1)
                    log.condition.lock()
                    log.state.zeroAhead.zeroerAsleep = false
                }
                log.condition.unlock()
            }
        }
        thread.name = "imgstore.wal-zeroer"
        thread.start()
    }

    /// Zeros the next range, if there is one; returns whether it did. Called and returns with
    /// the lock held; drops it for the I/O.
    private func zeroNextRange() -> Bool {
        guard let range = nextZeroRange(), let file = state.segment?.file else { return false }
        state.zeroAhead.inFlight = range
        condition.unlock()
        var writeFailed = false
        var failure: LogIOError?
        do {
            try Self.zeros.withUnsafeBytes { zeros in
                Result { () throws(LogIOError) in
                    try file.write([UnsafeRawBufferPointer(rebasing: zeros.prefix(range.count))], at: range.lowerBound)
                }
            }.get()
        } catch {
            writeFailed = true
        }
        if !writeFailed {
            do { try file.writeBack(range) } catch { failure = error }
        }
        condition.lock()
        state.zeroAhead.inFlight = nil
        if writeFailed {
            // Zeros into allocated blocks fail only on a sick device, and a failed write
            // reports nothing the log's own sync will not: zeroing just stops.
            state.zeroAhead.enabled = false
        } else if let failure {
            // The writeback may have reported (and cleared) an error of the log's own pages.
            state.failure = state.failure ?? failure
            wakeAll()
        } else if state.zeroAhead.segment == state.segment?.number {
            state.zeroAhead.writtenThrough = max(state.zeroAhead.writtenThrough, range.upperBound)
        }
        condition.broadcast()  // a leader waiting for the range, a close
        return !writeFailed && failure == nil
    }

    /// One chunk of zeros, shared by every log.
    private static let zeros = [UInt8](repeating: 0, count: chunkBytes)
}
